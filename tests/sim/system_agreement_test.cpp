// SPDX-License-Identifier: Apache-2.0
// The papers as systems: each built-in system-* scenario against the dedicated model it
// restates (docs/RESULTS.md, "The papers as systems"), strategy by strategy, within the bounds
// the two must share: success rate within 0.03; load, attempts per operation and the tails
// within 10 %. Different random streams, so the bounds carry sampling noise as well: runs are
// long enough (30 000 operations; hedging's tail: the example's 2000, whose quantiles sit on
// steps) that the noise is a small part of them. Isaev's outage adds its own figures
// (load_amplification, success_by_phase, recovery_s), compared the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "builtin_scenario.hpp"
#include "sim/run/runner.hpp"

namespace system_agreement_test {

namespace report = backoff::report;
using backoff::test::by_name;
using backoff::test::run_builtin;

// The step of `steps` (ascending) nearest to v, by ratio.
std::size_t nearest_step(double v, const std::vector<double>& steps) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < steps.size(); ++i) {
    if (std::abs(std::log(v / steps[i])) < std::abs(std::log(v / steps[best]))) best = i;
  }
  return best;
}

// `steps`: when the latency is drawn from a few values (a tail of steps), a quantile that falls
// exactly on a step's share is a coin flip between the step and the one below it, in either
// model, at any number of operations. Then the two tails agree when each is within 10 % of a
// step and their steps are the same or neighbours.
void expect_agreement(const std::string& dedicated, const std::string& system,
                      const std::vector<std::string>& sets, const std::vector<double>& steps = {}) {
  const auto a = by_name(run_builtin(dedicated, sets));
  const auto b = by_name(run_builtin(system, sets));
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, d] : a) {
    ASSERT_TRUE(b.contains(name)) << system << " has no strategy " << name;
    const report::strategy_summary& s = b.at(name);
    const std::string where = system + " " + name;
    EXPECT_NEAR(s.success_rate(), d.success_rate(), 0.03) << where;
    EXPECT_NEAR(s.attempts_per_operation, d.attempts_per_operation, 0.1 * d.attempts_per_operation)
        << where;
    ASSERT_TRUE(d.latency_s && s.latency_s) << where;
    for (const auto& [q, sv, dv] : {std::tuple{"p95", s.latency_s->p95, d.latency_s->p95},
                                    std::tuple{"p99", s.latency_s->p99, d.latency_s->p99}}) {
      if (steps.empty()) {
        EXPECT_NEAR(sv, dv, 0.1 * dv) << where << " " << q;
        continue;
      }
      const std::size_t ss = nearest_step(sv, steps), ds = nearest_step(dv, steps);
      EXPECT_NEAR(sv, steps[ss], 0.1 * steps[ss]) << where << " " << q;
      EXPECT_NEAR(dv, steps[ds], 0.1 * steps[ds]) << where << " " << q;
      EXPECT_LE(std::max(ss, ds) - std::min(ss, ds), 1u)
          << where << " " << q << ": " << sv << " s against " << dv << " s";
    }
  }
}

TEST(SystemAgreement, RetryFailureRate) {
  for (const char* rate : {"failure_rate=0.01", "failure_rate=0.2", "failure_rate=0.5"}) {
    expect_agreement("retry-failure-rate", "system-retry-failure-rate",
                     {rate, "replications=1", "run.duration=\"30s\""});
  }
}

// smira's outage as a system (a concurrency curve with a tick, a pause, users who think first): the
// fixed retry keeps the server down in both, exponential backoff recovers in both, within 25 %
// of the same time. Also with a shorter pause, through the dedicated model's keys as knobs.
TEST(SystemAgreement, OutageRecovery) {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{},
        std::vector<std::string>{"outage.duration=\"4s\"", "workload.clients=800"}}) {
    expect_agreement("outage-recovery", "system-outage-recovery", sets);
    const auto a = by_name(run_builtin("outage-recovery", sets));
    const auto b = by_name(run_builtin("system-outage-recovery", sets));
    for (const auto& [name, d] : a) {
      const report::strategy_summary& s = b.at(name);
      ASSERT_EQ(s.recovery_s.has_value(), d.recovery_s.has_value()) << name;
      if (d.recovery_s) {
        EXPECT_NEAR(*s.recovery_s, *d.recovery_s, 0.25 * *d.recovery_s) << name;
      }
      EXPECT_NEAR(static_cast<double>(s.peak_load), static_cast<double>(d.peak_load),
                  0.1 * static_cast<double>(d.peak_load))
          << name;
    }
  }
  // At the defaults, what the article shows: fixed never comes back, exponential does.
  const auto b = by_name(run_builtin("system-outage-recovery"));
  EXPECT_FALSE(b.at("fixed").recovery_s.has_value());
  EXPECT_TRUE(b.at("exponential").recovery_s.has_value());
}

TEST(SystemAgreement, HedgingTail) {
  // At the defaults: 2000 calls a strategy, as the example makes them. A call takes a round trip
  // (0.5 ms) or a step: the hedge's 1 s or the server's 2, 5 and 10 s. The unhedged p95 and p99
  // and the hedged p99 fall exactly on a step's share (5 % of calls take 5 s or more, 1 % 10 s;
  // hedged, 1 % need the 2 s copy): each is a coin flip between two steps in either model
  // (docs/RESULTS.md: the dedicated model's unhedged p95 is 2 s in 56 % of seeds, 5 s in 44 %).
  expect_agreement("hedging-tail", "system-hedging-tail", {}, {0.0005, 1.0, 2.0, 5.0, 10.0});
}

// The value of a strategy's field, or NaN when it has none (then every comparison fails).
double field_of(const report::strategy_summary& s, const std::string& name) {
  for (const auto& f : s.fields) {
    if (f.name == name && f.value) return *f.value;
  }
  return std::nan("");
}

// ThomWright's layers as a system. The dedicated model's load counts calls reaching the
// dependency per request (its attempts are the dependency's calls); the system's counts the
// client's attempts (1: the client never retries), so deepest_calls_per_request and each layer's
// calls per request (the services' amplification) carry the comparison. The dedicated model's
// default recovery clock is the code's (quirks = true: the calling loop's backoff only), which
// the system form does not have (the time since the loop's first attempt): at the source's 2 s
// recovery the gap is a few per cent. Also where the signal matters, failures half as often,
// recovering in 50 ms: there the failed calls' own time (5 ms each) is a tenth of the recovery,
// and the p95 of the code's clock is 11 to 16 % above the elapsed time's, so the dedicated model
// runs with quirks = false (the post's reading, which the system form has).
TEST(SystemAgreement, RetryLayers) {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{},
        std::vector<std::string>{"failure_rate=0.5", "failure.recovery=\"50ms\""}}) {
    std::vector<std::string> dedicated = sets;
    if (!sets.empty()) dedicated.emplace_back("quirks=false");
    const auto a = by_name(run_builtin("retry-layers", dedicated));
    const auto b = by_name(run_builtin("system-retry-layers", sets));
    ASSERT_EQ(a.size(), b.size());
    for (const auto& [name, d] : a) {
      ASSERT_TRUE(b.contains(name)) << name;
      const report::strategy_summary& s = b.at(name);
      const std::string where = "system-retry-layers " + name + (sets.empty() ? "" : " " + sets[0]);
      EXPECT_NEAR(s.success_rate(), d.success_rate(), 0.03) << where;
      const double deepest = field_of(d, "deepest_calls_per_request");
      EXPECT_NEAR(field_of(s, "deepest_calls_per_request"), deepest, 0.1 * deepest) << where;
      EXPECT_NEAR(d.attempts_per_operation, deepest, 1e-9) << where << ": the dedicated load";
      EXPECT_DOUBLE_EQ(s.attempts_per_operation, 1.0) << where << ": the client never retries";
      int layer = 1;
      for (const char* service : {"layer1", "layer2", "layer3", "dependency"}) {
        const double calls = field_of(d, "calls_per_request.layer" + std::to_string(layer++));
        EXPECT_NEAR(field_of(s, std::string("services.") + service + ".amplification"), calls,
                    0.1 * calls)
            << where << " " << service;
      }
      ASSERT_TRUE(d.latency_s && s.latency_s) << where;
      EXPECT_NEAR(s.latency_s->p95, d.latency_s->p95, 0.1 * d.latency_s->p95) << where;
      EXPECT_NEAR(s.latency_s->p99, d.latency_s->p99, 0.1 * d.latency_s->p99) << where;
    }
  }
  // What the post shows, in the system form: every layer retrying succeeds far more often than
  // the top only, at nearly three times the calls on the dependency; the signal keeps the
  // dependency's calls to those of the layer next to it.
  const auto b = by_name(run_builtin("system-retry-layers"));
  EXPECT_GT(b.at("retry-every-layer").success_rate(), 0.99);
  EXPECT_LT(b.at("retry-top-only").success_rate(), 0.4);
  EXPECT_GT(field_of(b.at("retry-every-layer"), "deepest_calls_per_request"),
            2.5 * field_of(b.at("retry-top-only"), "deepest_calls_per_request"));
  EXPECT_DOUBLE_EQ(field_of(b.at("retry-only-if-retryable"), "services.layer3.amplification"), 1.0);
}

// Isaev's outage figures of one strategy, averaged over seeds (recovery_s over the runs that
// recovered, and how many did).
struct outage_figures {
  std::map<std::string, double> mean;
  int recovered = 0;
};

std::map<std::string, outage_figures> outage_means(const std::string& scenario,
                                                   const std::vector<std::string>& sets,
                                                   int seeds) {
  std::map<std::string, outage_figures> out;
  for (int seed = 1; seed <= seeds; ++seed) {
    for (const auto& s : run_builtin(scenario, sets, static_cast<std::uint64_t>(seed)).strategies) {
      outage_figures& o = out[s.name];
      o.mean["success_rate"] += s.success_rate() / seeds;
      o.mean["load"] += s.attempts_per_operation / seeds;
      if (s.latency_s) {
        o.mean["p95"] += s.latency_s->p95 / seeds;
        o.mean["p99"] += s.latency_s->p99 / seeds;
      }
      for (const auto& f : s.fields) {
        if (f.value) o.mean[f.name] += *f.value / seeds;
      }
      if (s.recovery_s) {
        o.mean["recovery_s"] += *s.recovery_s;
        ++o.recovered;
      }
    }
  }
  for (auto& [name, o] : out) {
    if (o.recovered > 0) o.mean["recovery_s"] /= o.recovered;
  }
  return out;
}

// Both forms over the same seeds (their random streams differ, so the gaps are sampling noise;
// the means of 6 runs of 7500 calls keep it well inside the bounds). Success rates within 0.03;
// load, the tails and load_amplification within 10 %; success_by_phase within 0.03; recovery_s
// in as many runs and, with `recovery`, its mean within 25 % or one 50 ms bucket. At the
// source's 20 ms buckets recovery_s is mostly noise: a bucket holds ~100 calls (+-10 %), and one
// below 90 % of the baseline restarts the 100 ms hold, so plain no-retries reads 0 in one seed
// and 0.12 s in the next (nonzero in 7 of seeds 11-40 dedicated, 12 as a system); with 50 ms
// buckets (hold: 2 of them) it settles. client-breaker's edge asks its breaker before first
// tries only (breaker_asks = "first-tries"), as the source's client does.
void expect_outage_agreement(const std::vector<std::string>& sets, bool recovery, bool rest) {
  constexpr int seeds = 6;
  const auto a = outage_means("outage-amplification", sets, seeds);
  const auto b = outage_means("system-outage-amplification", sets, seeds);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, d] : a) {
    ASSERT_TRUE(b.contains(name)) << name;
    const outage_figures& s = b.at(name);
    const std::string where = "system-outage-amplification " + name;
    const auto near = [&](const std::string& f, double bound) {
      ASSERT_TRUE(d.mean.contains(f) && s.mean.contains(f)) << where << ": no " << f;
      EXPECT_NEAR(s.mean.at(f), d.mean.at(f), bound) << where << " " << f;
    };
    for (const char* f : {"success_rate", "success_by_phase.after"}) near(f, 0.03);
    ASSERT_EQ(s.recovered, d.recovered) << where << " runs that recovered";
    if (recovery && d.recovered > 0) {
      near("recovery_s", std::max(0.25 * d.mean.at("recovery_s"), 0.05));
    }
    if (!rest) continue;
    if (d.mean.contains("success_by_phase.outage")) near("success_by_phase.outage", 0.03);
    for (const char* f : {"load", "p95", "p99", "load_amplification.pre", "load_amplification.peak",
                          "load_amplification.outage_mean", "load_amplification.after"}) {
      near(f, 0.1 * d.mean.at(f));
    }
  }
}

TEST(SystemAgreement, OutageAmplification) {
  expect_outage_agreement({}, false, true);
  expect_outage_agreement({"run.bucket=\"50ms\""}, true, false);
  expect_outage_agreement({"outage.fraction=0.5", "run.bucket=\"50ms\""}, true, true);
}

}  // namespace system_agreement_test
