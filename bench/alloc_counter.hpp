// Counts heap allocations made by the benchmark process, so that "zero allocations" is measured
// rather than claimed: each benchmark reports allocations per iteration as a counter.
#pragma once

#include <atomic>
#include <cstddef>

namespace backoff::bench {

std::size_t allocations() noexcept;

}  // namespace backoff::bench
