#include "tools/drctl_progress.h"

#include "absl/strings/str_format.h"

namespace drsim::tools {

void Progress::Update(size_t rules, size_t frames) {
  rules_ = rules;
  frames_ = frames;
  if (!enabled_ || ++calls_ % 1024 != 0) return;
  const Clock::time_point now = Clock::now();
  if (now - start_ < std::chrono::seconds(1) || now - last_print_ < std::chrono::milliseconds(100)) return;
  last_print_ = now;
  Print();
}

void Progress::Print() {
  err_ << absl::StrFormat("\r%d rules installed", rules_);
  if (total_frames_ > 0) err_ << absl::StrFormat(", %d/%d frames sent", frames_, total_frames_);
  err_ << std::flush;
  shown_ = true;
}

void Progress::Finish() {
  if (!shown_) return;
  Print();
  err_ << "\n" << std::flush;
  shown_ = false;
}

}  // namespace drsim::tools
