// main() of the benches that run DPDK peers: Google Benchmark's flags, after the EAL (bench/eal.h).
#include "bench/eal.h"

int main(int argc, char** argv) { return drsim::bench::RunBenchmarksWithEal(argc, argv, 2048); }
