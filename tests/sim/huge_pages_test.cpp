// SPDX-License-Identifier: Apache-2.0
// huge_page_allocator (sim/engine/huge_pages.hpp): large arrays start on a 2 MiB boundary (so a
// huge page can back them), small ones are plain allocations, and a vector using it behaves as
// any vector (growth, copies, swaps between large and small buffers).
#include "sim/engine/huge_pages.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace {

using backoff::sim::huge_page_allocator;

struct record {
  std::uint64_t a = 0, b = 0;
  double c = 0;
};

TEST(HugePages, LargeArraysStartOnA2MiBBoundary) {
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  huge_page_allocator<record> alloc;
  for (const std::size_t n : {std::size_t{1} << 17, (std::size_t{3} << 20) / sizeof(record) + 7}) {
    record* p = alloc.allocate(n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % huge, 0u) << n;
    p[n - 1].a = 42;  // the whole array is there
    EXPECT_EQ(p[n - 1].a, 42u);
    alloc.deallocate(p, n);
  }
  record* small = alloc.allocate(10);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small) % alignof(record), 0u);
  alloc.deallocate(small, 10);
  EXPECT_THROW((void)alloc.allocate(std::size_t(-1) / 2), std::bad_array_new_length);
}

TEST(HugePages, AVectorOnItBehavesAsAnyVector) {
  std::vector<std::uint64_t, huge_page_allocator<std::uint64_t>> big, small(3, 7);
  for (std::uint64_t i = 0; i < (std::uint64_t{1} << 20); ++i)
    big.push_back(i);  // grows past 2 MiB
  EXPECT_EQ(std::accumulate(big.begin(), big.end(), std::uint64_t{0}),
            (std::uint64_t{1} << 20) * ((std::uint64_t{1} << 20) - 1) / 2);
  big.swap(small);
  EXPECT_EQ(big.size(), 3u);
  EXPECT_EQ(small.size(), std::size_t{1} << 20);
  auto copy = small;
  EXPECT_EQ(copy, small);
  small.clear();
  small.shrink_to_fit();
  EXPECT_EQ(copy.back(), (std::uint64_t{1} << 20) - 1);
}

}  // namespace
