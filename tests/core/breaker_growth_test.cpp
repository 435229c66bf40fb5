// SPDX-License-Identifier: Apache-2.0
// A break that grows (open_growth, open_max): each reopening before a close stays open longer,
// up to open_max, and a close starts again at `open`. The rule follows Polly v8's
// CircuitStateController, which hands its BreakDurationGenerator the half-open attempts since
// the last close (incremented on each half-open, zeroed on closing); the keys follow the spec
// grammar's one table, and keyed breakers pass them through.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/circuit_breaker.hpp"
#include "backoff/error.hpp"
#include "backoff/keyed_breakers.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::breaker_state;
using backoff::breaker_transition;
using backoff::circuit_breaker;
using backoff::duration;
using backoff::parse_breaker;

// Fails a trial at `now` (the breaker must admit one) and returns how long it stays open.
duration growth_fail_trial(circuit_breaker& b, duration now) {
  const auto p = b.try_acquire(now, true);
  EXPECT_TRUE(p.trial) << now.count();
  b.record(now, p, true);
  return b.open_remaining(now).value_or(duration{-1});
}

std::string growth_parse_error(std::string_view text) {
  try {
    (void)parse_breaker(text);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BreakerGrowth, EachReopeningDoublesTheBreakUpToOpenMax) {
  circuit_breaker b{
      parse_breaker("breaker(kind=consecutive, failures=1, open=5s, open_growth=2, open_max=30s, "
                    "half_open=1)")};
  const auto first = b.try_acquire(0s, true);
  b.record(0s, first, true);
  EXPECT_EQ(b.open_remaining(0s), duration{5s});
  duration now = 5s;
  std::vector<duration> breaks;
  for (int i = 0; i < 4; ++i) {
    const duration d = growth_fail_trial(b, now);
    breaks.push_back(d);
    now += d;
  }
  EXPECT_EQ(breaks, (std::vector<duration>{10s, 20s, 30s, 30s}));
  EXPECT_EQ(b.state(now - 1ns), breaker_state::open);
  EXPECT_EQ(b.state(now), breaker_state::half_open);
}

TEST(BreakerGrowth, ACloseStartsAgainAtOpen) {
  circuit_breaker b{parse_breaker(
      "breaker(kind=consecutive, failures=1, open=1s, open_growth=3, open_max=1m, half_open=1)")};
  const auto p = b.try_acquire(0s, true);
  b.record(0s, p, true);
  EXPECT_EQ(growth_fail_trial(b, 1s), duration{3s});
  EXPECT_EQ(growth_fail_trial(b, 4s), duration{9s});
  const auto trial = b.try_acquire(13s, true);
  b.record(13s, trial, false);  // closes
  ASSERT_EQ(b.state(13s), breaker_state::closed);
  const auto again = b.try_acquire(20s, true);
  b.record(20s, again, true);
  EXPECT_EQ(b.open_remaining(20s), duration{1s});
  EXPECT_EQ(growth_fail_trial(b, 21s), duration{3s});
}

TEST(BreakerGrowth, AFractionalGrowthAndNoOpenMaxStopsAtADay) {
  circuit_breaker b{
      parse_breaker("breaker(kind=rate, threshold=100%, window=1calls, min_calls=1, open=16h, "
                    "open_growth=1.5, half_open=1)")};
  const auto p = b.try_acquire(0s, true);
  b.record(0s, p, true);
  EXPECT_EQ(b.open_remaining(0s), duration{16h});
  EXPECT_EQ(growth_fail_trial(b, 16h), duration{24h});  // 24 h: 1.5 x 16 h
  EXPECT_EQ(growth_fail_trial(b, 40h), duration{24h});  // 36 h, held at the day
}

TEST(BreakerGrowth, ResetAndTheManualStatesStartAgainAtOpen) {
  circuit_breaker b{parse_breaker(
      "breaker(kind=consecutive, failures=1, open=1s, open_growth=2, open_max=1h, half_open=1)")};
  const auto p = b.try_acquire(0s, true);
  b.record(0s, p, true);
  EXPECT_EQ(growth_fail_trial(b, 1s), duration{2s});
  b.force_open(2s);
  b.reset(3s);
  const auto q = b.try_acquire(3s, true);
  b.record(3s, q, true);
  EXPECT_EQ(b.open_remaining(3s), duration{1s});  // reset: back at `open`
  EXPECT_EQ(growth_fail_trial(b, 4s), duration{2s});
  b.disable(5s);
  b.reset(5s);
  const auto r = b.try_acquire(5s, true);
  b.record(5s, r, true);
  EXPECT_EQ(b.open_remaining(5s), duration{1s});
}

TEST(BreakerGrowth, WithoutGrowthEveryBreakIsOpen) {
  std::vector<breaker_transition> seen;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=2s, half_open=1)"),
                    [&](const breaker_transition& t) { seen.push_back(t); }};
  const auto p = b.try_acquire(0s, true);
  b.record(0s, p, true);
  EXPECT_EQ(growth_fail_trial(b, 2s), duration{2s});
  EXPECT_EQ(growth_fail_trial(b, 4s), duration{2s});
  EXPECT_EQ(seen.size(), 5u);
}

TEST(BreakerGrowthSpec, ReadsWritesAndReadsBackTheKeys) {
  const auto c = parse_breaker("breaker(kind=consecutive, open=5s, open_growth=2, open_max=5m)");
  EXPECT_DOUBLE_EQ(c.open_growth, 2.0);
  EXPECT_EQ(c.open_max, duration{5min});
  EXPECT_EQ(c.to_string(),
            "breaker(kind=consecutive, failures=5, open=5s, open_growth=2, open_max=5m, "
            "half_open=1)");
  EXPECT_EQ(parse_breaker(c.to_string()), c);
  const auto no_max = parse_breaker("breaker(kind=rate, open_growth=1.5)");
  EXPECT_EQ(no_max.to_string().find("open_max"), std::string::npos);
  EXPECT_EQ(parse_breaker(no_max.to_string()), no_max);
  // The defaults write nothing new: every spec written before reads and writes the same.
  EXPECT_EQ(parse_breaker("breaker(kind=rate)").to_string(),
            "breaker(kind=rate, threshold=50%, window=10s, min_calls=20, open=5s, half_open=3)");
}

TEST(BreakerGrowthSpec, ErrorsAreOneLine) {
  EXPECT_EQ(growth_parse_error("breaker(open_growth=0.5)"),
            "bad breaker \"breaker(open_growth=0.5)\": open_growth=0.5 must be in 1..100");
  EXPECT_EQ(growth_parse_error("breaker(open=5s, open_growth=2, open_max=1s)"),
            "bad breaker \"breaker(open=5s, open_growth=2, open_max=1s)\": open_max=1s must be "
            "in [open, 1d], open=5s");
  EXPECT_EQ(growth_parse_error("breaker(open_max=1m)"),
            "bad breaker \"breaker(open_max=1m)\": parameter \"open_max\" applies only with "
            "open_growth above 1 (the break never grows)");
  EXPECT_EQ(growth_parse_error("breaker(kind=retry-only, open_growth=2)"),
            "bad breaker \"breaker(kind=retry-only, open_growth=2)\": parameter \"open_growth\" "
            "does not apply to kind=retry-only (it takes threshold, window, keyed, max_keys)");
  const std::string typo = growth_parse_error("breaker(open_grwth=2)");
  EXPECT_NE(typo.find("did you mean 'open_growth'?"), std::string::npos) << typo;
}

TEST(BreakerGrowthSpec, ConfigsBuiltInCodeAreCheckedToo) {
  backoff::breaker_config c;
  c.open_growth = 2;
  c.open_max = 1s;  // under open=5s
  try {
    c.validate();
    ADD_FAILURE() << "open_max under open validated";
  } catch (const backoff::parse_error& e) {
    EXPECT_STREQ(e.what(), "open_max=1s must be in [open, 1d], open=5s");
  }
  c.open_max = 0s;
  c.open_growth = 101;
  EXPECT_THROW(c.validate(), backoff::parse_error);
}

TEST(BreakerGrowthKeyed, KeyedBreakersPassTheNewKeysThrough) {
  backoff::keyed_breakers breakers{parse_breaker(
      "breaker(kind=rate, threshold=100%, window=2calls, min_calls=2, open=1s, open_growth=2, "
      "open_max=4s, slow=1s, slow_threshold=50%, keyed=true, max_keys=10)")};
  const std::shared_ptr<circuit_breaker> b = breakers.get("shard-1");
  EXPECT_EQ(b->config(), breakers.config());
  const auto slow = b->try_acquire(0s, true);
  b->record(2s, slow, false);  // slow
  const auto fast = b->try_acquire(2s, true);
  b->record(2s, fast, false);  // 1 of 2 slow: 50 %
  EXPECT_EQ(b->state(2s), breaker_state::open);
  EXPECT_EQ(breakers.get("shard-2")->state(2s), breaker_state::closed);
  EXPECT_EQ(growth_fail_trial(*b, 3s), duration{2s});
}

}  // namespace
