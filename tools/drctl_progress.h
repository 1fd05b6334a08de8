// drctl's progress line: rules installed and frames sent, on stderr, for loads and runs that take long.
//
// What
//   Once a second has passed since the start, a line "\r<rules> rules installed, <frames>/<total> frames
//   sent" (without the frames when there are none) is rewritten on `err` at most ten times a second, and
//   ended with a newline by Finish(). A quick run prints nothing; a disabled one (stderr is not a terminal)
//   never prints.
//
// How
//   Update() is called often (each command, each frame); it reads the clock only every 1024th call.
//
// Thread-safety
//   One thread.
#ifndef DRSIM_TOOLS_DRCTL_PROGRESS_H_
#define DRSIM_TOOLS_DRCTL_PROGRESS_H_

#include <chrono>
#include <cstddef>
#include <ostream>

namespace drsim::tools {

class Progress {
 public:
  Progress(std::ostream& err, bool enabled) : err_(err), enabled_(enabled) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void set_total_frames(size_t total) { total_frames_ = total; }
  void Rules(size_t installed) { Update(installed, frames_); }
  void Frames(size_t sent) { Update(rules_, sent); }
  // Prints the final counts and a newline if a line was shown.
  void Finish();

 private:
  void Update(size_t rules, size_t frames);
  void Print();

  using Clock = std::chrono::steady_clock;
  std::ostream& err_;
  const bool enabled_;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point last_print_{};
  size_t calls_ = 0;
  size_t rules_ = 0, frames_ = 0, total_frames_ = 0;
  bool shown_ = false;
};

}  // namespace drsim::tools

#endif  // DRSIM_TOOLS_DRCTL_PROGRESS_H_
