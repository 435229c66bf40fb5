// SPDX-License-Identifier: Apache-2.0
// Durations at the top of their range, for the tests that every `now + d` saturates
// (docs/RELIABILITY.md, "Hostile HTTP, round 3a"): the edges, then draws over the whole upper
// range with a fixed seed, from 2^40 ns (about 18 minutes) to the maximum.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backoff/duration.hpp"

namespace backoff::test {

inline std::vector<duration> top_of_the_range(int draws = 4) {
  std::vector<duration> out = {duration::max(), duration::max() - duration{1},
                               duration{9'223'372'036'854'770'000}, duration{1LL << 62}};
  std::mt19937_64 rng(39);
  std::uniform_int_distribution<std::int64_t> draw(1LL << 40,
                                                   std::numeric_limits<std::int64_t>::max());
  for (int i = 0; i < draws; ++i) out.push_back(duration{draw(rng)});
  return out;
}

}  // namespace backoff::test
