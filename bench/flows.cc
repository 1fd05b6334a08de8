#include "bench/flows.h"

#include <random>

namespace drsim::bench {

std::vector<Flow> Flows(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Flow> flows(n);
  for (Flow& f : flows) {
    f = {static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), static_cast<uint16_t>(rng()),
         static_cast<uint16_t>(rng())};
  }
  return flows;
}

std::vector<size_t> Trace(size_t flows, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<size_t> trace(count);
  for (size_t& i : trace) i = rng() % flows;
  return trace;
}

}  // namespace drsim::bench
