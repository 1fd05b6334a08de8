#include "bench/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>

#include <cstdio>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

namespace drsim::bench {

bool InitEal(int memory_mb) {
  std::vector<std::string> args = {"drsim_bench",
                                   "--no-huge",
                                   "--no-pci",
                                   "-m",
                                   std::to_string(memory_mb),
                                   "--no-shconf",
                                   "--no-telemetry",
                                   "--log-level=lib.eal:error"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    std::fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
    return false;
  }
  return true;
}

int RunBenchmarksWithEal(int argc, char** argv, int memory_mb) {
  if (!InitEal(memory_mb)) return 1;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  rte_eal_cleanup();
  return 0;
}

}  // namespace drsim::bench
