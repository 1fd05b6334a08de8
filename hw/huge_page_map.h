// Internal to hw:lookup_memory: how its memory is mapped from the kernel.
#ifndef DRSIM_HW_HUGE_PAGE_MAP_H_
#define DRSIM_HW_HUGE_PAGE_MAP_H_

#include <cstddef>

namespace drsim::hw::internal {

// `bytes` (a multiple of kHugePageBytes), huge-page aligned and advised as transparent huge pages. While a
// HugePageStocking lives, its pages come from the huge-page stock (already touched) as far as it has them;
// the rest are freshly mapped. Throws std::bad_alloc when out of memory. Release with munmap.
void* MapHugePages(size_t bytes);

}  // namespace drsim::hw::internal

#endif  // DRSIM_HW_HUGE_PAGE_MAP_H_
