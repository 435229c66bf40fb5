// SPDX-License-Identifier: Apache-2.0
// The seed 004 server: its lazy implementation (a timer for the oldest waiting request only)
// must finish every request at the instant the plain per-tick rule of server.go does. The
// reference below wakes every request at every tick and reads N there, exactly as the Go handler
// loops; both are driven by the same random arrivals, with and without a pause.
#include "sim/models/concurrency_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "backoff/random.hpp"
#include "seed_models/service_time.hpp"

namespace {

namespace sim = backoff::sim;
using sim::time_ns;

constexpr time_ns ms = 1'000'000;

struct scenario_case {
  std::vector<time_ns> arrivals;  // ascending
  time_ns pause_at = -1, resume_at = -1;
};

// Poisson arrivals at `rate_per_s` for `seconds`, then a quiet tail so that everything ends.
std::vector<time_ns> poisson(std::uint64_t seed, double rate_per_s, double seconds) {
  backoff::random_generator g{seed};
  std::vector<time_ns> out;
  double t = 0;
  for (;;) {
    t += -std::log1p(-backoff::uniform01(g)) / rate_per_s;
    if (t >= seconds) return out;
    out.push_back(static_cast<time_ns>(t * 1e9));
  }
}

// The Go handler, literally: each request checks every tick from its start (or from the resume,
// after a pause), with the N of that instant. Checks that fall at the same instant run oldest
// first (Go leaves that order to its scheduler; the model documents this one), after the
// arrivals of that instant. Returns each request's finish time.
std::vector<time_ns> per_tick_reference(const sim::concurrency_server::params& p,
                                        const scenario_case& c) {
  const auto service = [&](std::int64_t n) {
    const auto base = static_cast<double>(p.base_delay);
    return n <= p.limit ? base : base * std::pow(p.factor, static_cast<double>(n - p.limit) / p.k);
  };
  // (time, class, order, request): class 0 = pause, resume and arrivals, in `order` of
  // scheduling; class 1 = checks, `order` = (start, request) packed as start * 2^20 + request.
  enum { arrival, check, pause, resume };
  struct ev {
    time_ns t;
    int cls;
    std::uint64_t order;
    int kind;
    std::size_t i;
    bool operator>(const ev& o) const {
      return std::tie(t, cls, order) > std::tie(o.t, o.cls, o.order);
    }
  };
  std::priority_queue<ev, std::vector<ev>, std::greater<>> q;
  std::uint64_t seq = 0;
  std::vector<time_ns> start(c.arrivals.size(), -1), done(c.arrivals.size(), -1);
  const auto check_at = [&](time_ns t, std::size_t i) {
    q.push({t, 1, (static_cast<std::uint64_t>(start[i]) << 20) + i, check, i});
  };
  if (c.pause_at >= 0) {
    q.push({c.pause_at, 0, seq++, pause, 0});
    q.push({c.resume_at, 0, seq++, resume, 0});
  }
  for (std::size_t i = 0; i < c.arrivals.size(); ++i) {
    q.push({c.arrivals[i], 0, seq++, arrival, i});
  }
  std::vector<ev> held;  // events that fell due during the pause, in the order they fell due
  std::int64_t n = 0;
  bool paused = false;
  const auto run_check = [&](time_ns t, std::size_t i) {
    if (static_cast<double>(t - start[i]) >= service(n)) {
      done[i] = t;
      --n;
    } else {
      check_at(t + p.tick, i);
    }
  };
  while (!q.empty()) {
    const ev e = q.top();
    q.pop();
    if (e.t > 3'600'000 * ms) {
      ADD_FAILURE() << "the reference run did not drain within an hour";
      break;
    }
    if (paused && e.kind != resume) {
      held.push_back(e);
      continue;
    }
    switch (e.kind) {
      case arrival:
        start[e.i] = e.t;
        ++n;
        check_at(e.t + p.tick, e.i);
        break;
      case check:
        run_check(e.t, e.i);
        break;
      case pause:
        paused = true;
        break;
      case resume:
        paused = false;
        // The held checks first, in the order they fell due, then the held arrivals.
        for (const ev& h : held) {
          if (h.kind == check) run_check(e.t, h.i);
        }
        for (const ev& h : held) {
          if (h.kind == arrival) {
            start[h.i] = e.t;
            ++n;
            check_at(e.t + p.tick, h.i);
          }
        }
        held.clear();
        break;
      default:
        break;
    }
  }
  return done;
}

// The simulator's server, driven by the same arrivals.
class server_driver final : public sim::model, public sim::concurrency_server::listener {
 public:
  explicit server_driver(const sim::concurrency_server::params& p) : server_(p, *this) {}

  std::vector<time_ns> run(const scenario_case& c) {
    sim::engine e;
    const auto self = e.add(*this);
    server_.attach(e);
    done_.assign(c.arrivals.size(), -1);
    if (c.pause_at >= 0) {
      e.schedule_at(c.pause_at, self, 1);
      e.schedule_at(c.resume_at, self, 2);
    }
    for (std::size_t i = 0; i < c.arrivals.size(); ++i) e.schedule_at(c.arrivals[i], self, 0, i);
    e.run();
    return done_;
  }

  void handle(sim::engine& e, const sim::event& ev) override {
    if (ev.kind == 0) server_.arrive(e, ev.payload);
    if (ev.kind == 1) server_.pause(e);
    if (ev.kind == 2) server_.resume(e);
  }
  void served(sim::engine& e, std::uint64_t tag) override { done_[tag] = e.now(); }

 private:
  sim::concurrency_server server_;
  std::vector<time_ns> done_;
};

// Compares every finish time; returns the longest time a request spent on the server, so that
// a case can show it reached the regime it is meant to test.
time_ns expect_same_finish_times(const sim::concurrency_server::params& p, const scenario_case& c) {
  const auto expected = per_tick_reference(p, c);
  const auto got = server_driver(p).run(c);
  EXPECT_EQ(got.size(), expected.size());
  time_ns longest = 0;
  for (std::size_t i = 0; i < std::min(got.size(), expected.size()); ++i) {
    EXPECT_EQ(got[i], expected[i]) << "request " << i << " arriving at " << c.arrivals[i];
    if (got[i] != expected[i]) break;
    EXPECT_GE(got[i], 0) << "request " << i << " never finished";
    longest = std::max(longest, got[i] - c.arrivals[i]);
  }
  return longest;
}

sim::concurrency_server::params seed_server() {
  return {.limit = 30, .factor = 1.05, .k = 15, .base_delay = 100 * ms, .tick = 50 * ms};
}

TEST(ConcurrencyServer, UsesTheSharedServiceTime) {
  struct nothing : sim::concurrency_server::listener {
    void served(sim::engine&, std::uint64_t) override {}
  };
  nothing l;
  const sim::concurrency_server s({.limit = 30, .factor = 1.05, .k = 15, .base_delay = 100'000'001},
                                  l);
  for (const std::int64_t n : {0, 30, 31, 45, 300, 100'000}) {
    EXPECT_EQ(s.service_time(n),
              backoff::seed_models::service_time({30, 1.05, 15}, 100'000'001.0, n))
        << n;
  }
}

TEST(ConcurrencyServer, ServesInBaseDelayBelowTheLimit) {
  scenario_case c{{0, 10 * ms, 20 * ms}};
  const auto got = server_driver(seed_server()).run(c);
  EXPECT_EQ(got, (std::vector<time_ns>{100 * ms, 110 * ms, 120 * ms}));
}

TEST(ConcurrencyServer, HoldsRequestsLongerAsConcurrencyRises) {
  // 200 requests at once: D(200) = 100 ms * 1.05^(170/15) = 175 ms, so the first check that
  // reaches it is the 4th (200 ms); each finish lowers N for the next one at the same tick.
  scenario_case c{std::vector<time_ns>(200, 0)};
  const auto got = server_driver(seed_server()).run(c);
  EXPECT_EQ(got.front(), 200 * ms);
  EXPECT_EQ(got.back(), 200 * ms);
}

TEST(ConcurrencyServer, MatchesThePerTickRuleUnderModerateLoad) {
  // 600/s: N settles near 70, above the limit, so D moves with every arrival and finish.
  const time_ns longest = expect_same_finish_times(seed_server(), {poisson(1, 600, 10)});
  EXPECT_GT(longest, 100 * ms);
  EXPECT_LT(longest, 1'000 * ms);
}

TEST(ConcurrencyServer, MatchesThePerTickRuleThroughOverloadAndDrain) {
  // Open-loop arrivals above N / D(N)'s maximum (about 1240/s at N = 337) pile up: N passes a
  // thousand and D a minute; once they stop, the pile drains.
  EXPECT_GT(expect_same_finish_times(seed_server(), {poisson(2, 1'400, 1.2)}), 10'000 * ms);
}

TEST(ConcurrencyServer, MatchesThePerTickRuleAcrossAPause) {
  // 200 requests start together on resume: D(200+) is about 200 ms.
  EXPECT_GT(expect_same_finish_times(seed_server(), {poisson(3, 100, 12), 4'000 * ms, 6'000 * ms}),
            2'100 * ms);
}

TEST(ConcurrencyServer, MatchesThePerTickRuleAcrossAPauseShorterThanATick) {
  EXPECT_GT(expect_same_finish_times(seed_server(), {poisson(4, 200, 5), 1'000 * ms, 1'030 * ms}),
            100 * ms);
}

TEST(ConcurrencyServer, MatchesThePerTickRuleWithOddTicksAndFactors) {
  const sim::concurrency_server::params p{
      .limit = 3, .factor = 1.3, .k = 2, .base_delay = 37 * ms, .tick = 11 * ms};
  EXPECT_GT(expect_same_finish_times(p, {poisson(5, 50, 3.2), 3'000 * ms, 3'150 * ms}), 5'000 * ms);
}

TEST(ConcurrencyServer, StartsThePausesArrivalsTogetherOnResume) {
  scenario_case c{{1'000 * ms, 2'000 * ms, 3'000 * ms}, 500 * ms, 5'000 * ms};
  const auto got = server_driver(seed_server()).run(c);
  EXPECT_EQ(got, (std::vector<time_ns>(3, 5'100 * ms)));
}

}  // namespace
