// SPDX-License-Identifier: Apache-2.0
// Metafor's canonical queue with timeouts and retries (docs/models/metastable-queue.md): a spike
// tips the retrying clients into a full queue they never leave, while clients without retries
// drain it; and metafor's Markov chain, rebuilt rate for rate, as the cross-check of the
// discrete-event model at metafor's own parameters.
#include "sim/models/metastable_queue.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"

namespace {

namespace mq = backoff::sim::metastable_queue_model;
namespace report = backoff::report;
using backoff::test::by_name;
using backoff::test::run_builtin;

TEST(MetastableQueueChain, WithoutRetriesTheQueueIsTheTruncatedMM1) {
  // R = 0 and alpha = 0: orbit requests only ever give up and none join the orbit, so the
  // queue is a birth-death chain with rates lambda and mu on 0 .. 99, pi(n) proportional to
  // rho^n. (With alpha > 0 metafor adds alpha lambda tail(n) arrivals that also join the orbit.)
  mq::chain_params p;
  p.retries = 0;
  p.alpha = 0;
  p.lambda = 8;
  const std::vector<double> pi = mq::stationary(p);
  const double rho = p.lambda / p.mu;
  double norm = 0;
  for (int n = 0; n < p.queue_states; ++n) norm += std::pow(rho, n);
  for (int n = 0; n < p.queue_states; n += 7) {
    double marginal = 0;
    for (int r = 0; r < p.orbit_states; ++r) marginal += pi[mq::state(p, n, r)];
    EXPECT_NEAR(marginal, std::pow(rho, n) / norm, 1e-12) << "n = " << n;
  }
}

TEST(MetastableQueueChain, TheTimeoutTailIsChebyshevsBound) {
  const std::vector<double> tail = mq::timeout_tail(mq::chain_params{});
  EXPECT_EQ(tail[0], 0.0);
  // n = 10: mean 1 s, sigma sqrt(10)/10; (sigma / (3 - 1))^2 = 0.1 / 4.
  EXPECT_NEAR(tail[10], 0.025, 1e-12);
  EXPECT_EQ(tail[25], 1.0);  // 3 - 2.5 = 0.5 = sigma: no longer bounded
  EXPECT_EQ(tail[99], 1.0);
}

// The cross-check (docs/models/metastable-queue.md, "Cross-check"): metafor's chain and the
// event model agree on how long the canonical system (lambda = 9.5) holds before its queue fills,
// started empty with no trigger. The chain's mean hitting time of the full queue is exact for
// the chain; the event model's is the mean over 20 seeds of the first 1 s bucket that ends with
// 99 or more queued. They must agree within 2.5 standard errors of the event model's mean. (At
// lower lambda the chain, whose Chebyshev bound over-states timeouts, tips 2-3x sooner: the page
// has the table.)
TEST(MetastableQueueChain, AgreesWithTheEventModelOnTheTimeToFillAtTheCanonicalPoint) {
  mq::chain_params p;  // lambda = 9.5, mu = 10, T = 3 s, R = 4, queue 100, orbit 20
  const double chain = mq::mean_time_to_reach(p, p.queue_states - 1);
  std::vector<double> times;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto r = run_builtin("metastable-queue",
                               {"spike.duration=\"0s\"", "workload.rate_per_s=9.5",
                                "run.duration=\"1000s\"", "run.bucket=\"1s\""},
                               seed);
    const auto strategies = by_name(r);
    const report::strategy_summary& s = strategies.at("metafor-retries");
    std::size_t i = 0;
    while (i < s.buckets.size() && s.buckets[i].queued < 99) ++i;
    ASSERT_LT(i, s.buckets.size()) << "seed " << seed << " never filled its queue";
    times.push_back(static_cast<double>(i));
  }
  const auto n = static_cast<double>(times.size());
  double mean = 0;
  for (const double t : times) mean += t / n;
  double squares = 0;
  for (const double t : times) squares += (t - mean) * (t - mean);
  const double standard_error = std::sqrt(squares / (n - 1) / n);
  EXPECT_GT(chain, 30.0);  // metastable: far longer than a service time or a timeout
  EXPECT_NEAR(mean, chain, 2.5 * standard_error) << "chain " << chain << " s.e. " << standard_error;
}

TEST(MetastableQueue, RetriesStayDownAfterTheSpikeAndNoRetriesRecover) {
  const auto r = run_builtin("metastable-queue", {"run.duration=\"200s\""});
  const auto s = by_name(r);
  EXPECT_TRUE(r.outage);  // the spike is the trigger window
  EXPECT_FALSE(s.at("metafor-retries").recovery_s.has_value());
  ASSERT_TRUE(s.at("no-retries").recovery_s.has_value());
  // Retrying clients send up to five attempts a request while the queue is full.
  EXPECT_GT(s.at("metafor-retries").attempts_per_operation, 3.0);
  EXPECT_DOUBLE_EQ(s.at("no-retries").attempts_per_operation, 1.0);
}

TEST(MetastableQueue, AnOutageStopsServiceAndTheRequestInServiceResumes) {
  const auto r =
      run_builtin("metastable-queue", {"spike.duration=\"0s\"", "outage.start=\"40s\"",
                                       "outage.duration=\"20s\"", "run.duration=\"200s\""});
  const auto strategies = by_name(r);
  const report::strategy_summary& s = strategies.at("no-retries");
  ASSERT_TRUE(r.outage_s.has_value());
  EXPECT_DOUBLE_EQ(r.outage_s->first, 40.0);
  // Nothing is served during the outage (10 s buckets 4 and 5), and the queue is full at its end.
  for (std::size_t i = 4; i < 6; ++i) EXPECT_EQ(s.buckets.at(i).successes, 0u) << i;
  EXPECT_EQ(s.buckets.at(5).queued, 100);
  EXPECT_TRUE(s.recovery_s.has_value());
  EXPECT_FALSE(strategies.at("metafor-retries").recovery_s.has_value());
}

}  // namespace
