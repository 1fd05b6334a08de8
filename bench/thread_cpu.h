// The CPU time the calling thread has taken, for benches that report a rate a second of CPU beside the
// wall-clock rate: the machine is shared, and the wall clock also counts the time other threads and
// processes held the core.
//
// Thread-safety: each thread reads its own clock.
#ifndef DRSIM_BENCH_THREAD_CPU_H_
#define DRSIM_BENCH_THREAD_CPU_H_

#include <time.h>

namespace drsim::bench {

// The seconds of CPU the calling thread has taken since it started.
inline double ThreadCpuSeconds() {
  timespec cpu;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  return static_cast<double>(cpu.tv_sec) + 1e-9 * static_cast<double>(cpu.tv_nsec);
}

}  // namespace drsim::bench

#endif  // DRSIM_BENCH_THREAD_CPU_H_
