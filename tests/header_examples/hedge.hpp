// SPDX-License-Identifier: Apache-2.0
// What the examples in backoff/hedge.hpp take from their reader's program.
// blocks: 1 2
// scope: function
#include <cstdint>
#include <string>
extern backoff::hedge_policy policy;
extern backoff::retry_gates gates;
extern backoff::random_generator rng;
backoff::duration now();
void launch(std::uint32_t attempt, backoff::duration wait);
void cancel_in_flight();
struct event {
  bool answered;
  std::uint32_t attempt;
  backoff::verdict verdict;
};
event wait_until(backoff::duration when);
