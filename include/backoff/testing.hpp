// SPDX-License-Identifier: Apache-2.0
// Testing your own retry code without sleeping: a retry_env whose clock is a manual_clock, whose
// sleep records the delay and moves that clock on instead of waiting, and whose randomness is a
// generator with a fixed seed. A retry loop driven by it runs at once and the same way every time,
// so a test can assert the exact waits, the time the loop took and the calls it made. Standard
// library and backoff only: it fits GoogleTest, Catch2, doctest or a plain main().
//
// Polly v8's own tests drive its retry strategy the same way, through a fake TimeProvider
// (Microsoft.Extensions.TimeProvider.Testing, 2023); this one needs no framework. For the
// coroutine loop see async_testing.hpp.
//
// Call sequence: make a recording_env, pass rec.env to backoff::retry, then read rec.sleeps,
// rec.total_slept() and rec.clock. rec.stop.request_stop() cancels a loop as a shutdown would.
// Not thread-safe: one test thread uses it (the loop it drives runs on that thread).
//
//   using namespace std::chrono_literals;
//   backoff::testing::recording_env rec;              // seed 42, clock at 0
//   backoff::testing::fails_then_succeeds flaky{2};   // fails twice, then succeeds
//   const backoff::retry_policy policy{backoff::backoff_policy::exponential(1s, 2.0, 30s), 5};
//   const auto result = backoff::retry(flaky, policy, {}, rec.env);
//   if (!result || flaky.calls() != 3) return 1;
//   if (rec.sleeps != std::vector<backoff::duration>{1s, 2s}) return 1;
//   if (rec.clock.now().time_since_epoch() != 3s) return 1;  // the loop "took" 3 s, instantly
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

// env.now reads `clock`; env.sleep appends the delay to `sleeps`, advances `clock` by it and
// returns true, or, when the stop token is already requested, records nothing and returns false
// as a real interruptible sleep woken at once would; env.random draws from `rng`; env.stop is
// `stop`'s token. The env refers to these members, so the helper is neither copyable nor movable.
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

// An operation for backoff::retry that fails (returns false) on its first `failures` calls and
// succeeds from then on; calls() counts every call. retry() uses an operation passed as an
// lvalue in place, so the count is there to read after the loop.
class fails_then_succeeds {
 public:
  explicit fails_then_succeeds(std::uint32_t failures) noexcept : failures_(failures) {}

  bool operator()() noexcept {
    ++calls_;
    return calls_ > failures_;
  }
  std::uint32_t calls() const noexcept { return calls_; }

 private:
  std::uint32_t failures_;
  std::uint32_t calls_ = 0;
};

}  // namespace backoff::testing
