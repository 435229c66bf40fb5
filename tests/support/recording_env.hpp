// SPDX-License-Identifier: Apache-2.0
// A retry_env for tests: time is a manual_clock, sleeping only records the delay and moves that
// clock forward, and randomness comes from a generator with a fixed seed. A retry loop driven by
// it runs instantly and deterministically, and the test can then assert the exact waits.
//
//   backoff::testing::recording_env rec;                     // seed 42, clock at 0
//   auto result = backoff::retry(op, policy, classify, rec.env);
//   EXPECT_EQ(rec.sleeps, (std::vector<backoff::duration>{1s, 2s, 4s}));
//   rec.stop.request_stop();                                 // cancels the loop
//
// The env refers to the members of the helper, so the helper is neither copyable nor movable.
// A sleep asked for while the stop token is already requested records nothing and returns
// false, as a real interruptible sleep woken at once would.
#pragma once

#include <cstdint>
#include <numeric>
#include <stop_token>
#include <vector>

#include "backoff/clock.hpp"
#include "backoff/duration.hpp"
#include "backoff/random.hpp"
#include "backoff/retry.hpp"

namespace backoff::testing {

class recording_env {
 public:
  explicit recording_env(std::uint64_t seed = 42, duration start = duration{0})
      : clock(start), rng(seed) {
    env.now = [this] { return clock.now().time_since_epoch(); };
    env.sleep = [this](duration d, std::stop_token token) {
      if (token.stop_requested()) return false;
      sleeps.push_back(d);
      clock.advance(d);
      return true;
    };
    env.random = rng;
    env.stop = stop.get_token();
  }
  recording_env(const recording_env&) = delete;
  recording_env& operator=(const recording_env&) = delete;

  // The sum of the recorded sleeps.
  duration total_slept() const {
    return std::accumulate(sleeps.begin(), sleeps.end(), duration{0});
  }

  manual_clock clock;
  random_generator rng;
  std::vector<duration> sleeps;
  std::stop_source stop;  // env.stop is its token
  retry_env env;          // pass this to backoff::retry
};

}  // namespace backoff::testing
