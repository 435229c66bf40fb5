// SPDX-License-Identifier: Apache-2.0
// Properties of circuit breakers over random sequences of acquires, records, releases and time
// steps (rapidcheck): half-open never admits more than N trials, transitions follow the state
// machine's edges, and a consecutive breaker makes exactly the decisions of a small reference
// model of its documented rules.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "backoff/circuit_breaker.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::breaker_config;
using backoff::breaker_kind;
using backoff::breaker_state;
using backoff::breaker_transition;
using backoff::circuit_breaker;
using backoff::duration;

breaker_config any_gating_config() {
  breaker_config c =
      breaker_config::defaults(*rc::gen::element(breaker_kind::consecutive, breaker_kind::rate));
  c.open = duration{*rc::gen::inRange<std::int64_t>(1, 10'000)};
  c.half_open = *rc::gen::inRange<std::uint32_t>(1, 6);
  if (c.kind == breaker_kind::consecutive) {
    c.failures = *rc::gen::inRange<std::uint32_t>(1, 6);
  } else {
    c.threshold = static_cast<double>(*rc::gen::inRange(1, 101)) / 100.0;
    if (*rc::gen::arbitrary<bool>()) {
      c.window = duration{0};
      c.window_calls = *rc::gen::inRange<std::uint32_t>(1, 20);
      c.min_calls = *rc::gen::inRange<std::uint32_t>(1, c.window_calls + 1);
    } else {
      c.window = duration{*rc::gen::inRange<std::int64_t>(10, 100'000)};
      c.min_calls = *rc::gen::inRange<std::uint32_t>(1, 10);
    }
  }
  c.validate();
  return c;
}

enum class op : int { acquire, record, release, advance };

// Drives `b` with a random sequence; calls check(permit) after each acquire.
template <class Check>
void drive(circuit_breaker& b, bool with_releases, Check check) {
  std::vector<circuit_breaker::permit> outstanding;
  std::int64_t now = 0;
  const int steps = *rc::gen::inRange(1, 400);
  for (int i = 0; i < steps; ++i) {
    int pick = *rc::gen::inRange(0, 4);
    if (pick == static_cast<int>(op::release) && !with_releases)
      pick = static_cast<int>(op::record);
    const auto what = static_cast<op>(pick);
    switch (what) {
      case op::acquire: {
        const auto p = b.try_acquire(duration{now}, *rc::gen::arbitrary<bool>());
        check(p, duration{now});
        if (p) outstanding.push_back(p);
        break;
      }
      case op::record:
      case op::release: {
        if (outstanding.empty()) break;
        const auto k = *rc::gen::inRange<std::size_t>(0, outstanding.size());
        const auto p = outstanding[k];
        outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(k));
        if (what == op::release) {
          b.release(p);
        } else {
          b.record(duration{now}, p, *rc::gen::arbitrary<bool>());
        }
        break;
      }
      case op::advance:
        now += *rc::gen::inRange<std::int64_t>(0, 2 * b.config().open.count() + 2);
        break;
    }
  }
}

bool allowed_edge(breaker_state from, breaker_state to) {
  return (from == breaker_state::closed && to == breaker_state::open) ||
         (from == breaker_state::open && to == breaker_state::half_open) ||
         (from == breaker_state::half_open && to != breaker_state::half_open);
}

RC_GTEST_PROP(BreakerProperties, HalfOpenNeverAdmitsMoreThanNTrials, ()) {
  const breaker_config config = any_gating_config();
  std::vector<breaker_transition> transitions;
  circuit_breaker b{config, [&](const breaker_transition& t) { transitions.push_back(t); }};
  std::map<std::uint64_t, std::uint32_t> trials;  // per half-open episode (generation)
  drive(b, false, [&](const circuit_breaker::permit& p, duration now) {
    if (p.trial) {
      RC_ASSERT(++trials[p.generation] <= config.half_open);
    }
    // Admitted without being a trial only while closed; refused only while not closed.
    const breaker_state s = b.state(now);
    if (p && !p.trial) RC_ASSERT(s == breaker_state::closed);
    if (!p) RC_ASSERT(s != breaker_state::closed);
  });
  breaker_state at = breaker_state::closed;
  for (const auto& t : transitions) {
    RC_ASSERT(t.from == at);
    RC_ASSERT(allowed_edge(t.from, t.to));
    at = t.to;
  }
}

RC_GTEST_PROP(BreakerProperties, WithReleasesTheTrialsInFlightStayAtMostN, ()) {
  const breaker_config config = any_gating_config();
  circuit_breaker b{config};
  std::map<std::uint64_t, std::int64_t> in_flight;  // admitted minus released or recorded
  std::vector<circuit_breaker::permit> outstanding;
  std::int64_t now = 0;
  const int steps = *rc::gen::inRange(1, 400);
  for (int i = 0; i < steps; ++i) {
    switch (*rc::gen::inRange(0, 4)) {
      case 0: {
        const auto p = b.try_acquire(duration{now}, true);
        if (p) outstanding.push_back(p);
        if (p.trial) RC_ASSERT(++in_flight[p.generation] <= config.half_open);
        break;
      }
      case 1:
      case 2: {
        if (outstanding.empty()) break;
        const auto k = *rc::gen::inRange<std::size_t>(0, outstanding.size());
        const auto p = outstanding[k];
        outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(k));
        if (p.trial) --in_flight[p.generation];
        if (*rc::gen::arbitrary<bool>()) {
          b.release(p);
        } else {
          b.record(duration{now}, p, *rc::gen::arbitrary<bool>());
        }
        break;
      }
      default:
        now += *rc::gen::inRange<std::int64_t>(0, 2 * config.open.count() + 2);
        break;
    }
  }
}

// The documented rules of the consecutive kind, written out plainly.
struct consecutive_model {
  breaker_config c;
  breaker_state state = breaker_state::closed;
  std::uint64_t generation = 0;
  std::uint32_t in_a_row = 0;
  std::int64_t open_until = 0;
  std::uint32_t admitted = 0;
  std::uint32_t successes = 0;

  void move(breaker_state to, std::int64_t now) {
    if (to == breaker_state::open) open_until = now + c.open.count();
    if (to == breaker_state::half_open) admitted = successes = 0;
    if (to == breaker_state::closed) in_a_row = 0;
    state = to;
    ++generation;
  }
  circuit_breaker::permit acquire(std::int64_t now) {
    if (state == breaker_state::closed) return {true, false, true, generation};
    if (state == breaker_state::open) {
      if (now < open_until) return {false, false, true, generation};
      move(breaker_state::half_open, now);
    }
    if (admitted >= c.half_open) return {false, false, true, generation};
    ++admitted;
    return {true, true, true, generation};
  }
  void record(std::int64_t now, const circuit_breaker::permit& p, bool failure) {
    if (!p.allowed) return;
    if (p.trial) {
      if (state != breaker_state::half_open || generation != p.generation) return;
      if (failure) {
        move(breaker_state::open, now);
      } else if (++successes >= c.half_open) {
        move(breaker_state::closed, now);
      }
      return;
    }
    if (state != breaker_state::closed || generation != p.generation) return;
    if (!failure) {
      in_a_row = 0;
    } else if (++in_a_row >= c.failures) {
      move(breaker_state::open, now);
    }
  }
  void release(const circuit_breaker::permit& p) {
    if (p.trial && state == breaker_state::half_open && generation == p.generation && admitted > 0)
      --admitted;
  }
  breaker_state seen_at(std::int64_t now) const {
    return state == breaker_state::open && now >= open_until ? breaker_state::half_open : state;
  }
};

RC_GTEST_PROP(BreakerProperties, ConsecutiveBreakerFollowsItsRules, ()) {
  breaker_config config;
  config.failures = *rc::gen::inRange<std::uint32_t>(1, 5);
  config.open = duration{*rc::gen::inRange<std::int64_t>(1, 1000)};
  config.half_open = *rc::gen::inRange<std::uint32_t>(1, 4);
  circuit_breaker b{config};
  consecutive_model m{config};
  std::vector<circuit_breaker::permit> outstanding;
  std::int64_t now = 0;
  const int steps = *rc::gen::inRange(1, 300);
  for (int i = 0; i < steps; ++i) {
    switch (*rc::gen::inRange(0, 4)) {
      case 0: {
        const auto p = b.try_acquire(duration{now}, true);
        const auto q = m.acquire(now);
        RC_ASSERT(p.allowed == q.allowed);
        RC_ASSERT(p.trial == q.trial);
        RC_ASSERT(p.generation == q.generation);
        if (p) outstanding.push_back(p);
        break;
      }
      case 1:
      case 2: {
        if (outstanding.empty()) break;
        const auto k = *rc::gen::inRange<std::size_t>(0, outstanding.size());
        const auto p = outstanding[k];
        outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(k));
        if (*rc::gen::inRange(0, 5) == 0) {
          b.release(p);
          m.release(p);
        } else {
          const bool failure = *rc::gen::arbitrary<bool>();
          b.record(duration{now}, p, failure);
          m.record(now, p, failure);
        }
        break;
      }
      default:
        now += *rc::gen::inRange<std::int64_t>(0, 2 * config.open.count() + 2);
        break;
    }
    RC_ASSERT(b.state(duration{now}) == m.seen_at(now));
  }
}

RC_GTEST_PROP(BreakerProperties, CanonicalTextReadsBackEqual, ()) {
  breaker_config c = any_gating_config();
  if (*rc::gen::arbitrary<bool>()) {
    c.keyed = true;
    c.max_keys = *rc::gen::inRange<std::uint32_t>(1, 100'000);
  }
  RC_ASSERT(backoff::parse_breaker(c.to_string()) == c);
}

}  // namespace
