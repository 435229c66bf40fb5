// SPDX-License-Identifier: Apache-2.0
// An allocator for the simulator's large arrays (a model's per-operation records, 10^5 to 10^7 of
// them): an allocation of 2 MiB or more is aligned to 2 MiB and marked MADV_HUGEPAGE, so that
// where transparent huge pages are set to "madvise" (as on this project's CI VMs) it is backed
// by 2 MiB pages. The records are visited in no order the hardware can predict, one per event:
// with 4 KiB pages a million 152-byte records span 37,000 pages, far beyond the TLB, and every
// event paid a page walk (in a VM, a two-level one) before its record's cache miss even started.
// On 11-28's VM perf put a third of the x500 run's samples on the prefetch of the next record,
// and on huge pages the run takes 10-15 % less time (docs/PERFORMANCE.md, "A fourth look").
// Smaller allocations, and kernels without THP, get plain memory: the mark is a hint.
//
//   std::vector<record, sim::huge_page_allocator<record>> records(n);
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace backoff::sim {

template <class T>
struct huge_page_allocator {
  using value_type = T;
  static constexpr std::size_t huge_page = std::size_t{2} << 20;

  huge_page_allocator() noexcept = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}  // NOLINT: rebinding

  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T) - huge_page) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    if (bytes < huge_page || alignof(T) > huge_page) return std::allocator<T>{}.allocate(n);
    const std::size_t rounded = (bytes + huge_page - 1) & ~(huge_page - 1);
    void* p = std::aligned_alloc(huge_page, rounded);
    if (p == nullptr) throw std::bad_alloc();
    (void)::madvise(p, rounded, MADV_HUGEPAGE);  // a hint; EINVAL where THP is not built in
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < huge_page || alignof(T) > huge_page) {
      std::allocator<T>{}.deallocate(p, n);
    } else {
      std::free(p);
    }
  }
  template <class U>
  bool operator==(const huge_page_allocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace backoff::sim
