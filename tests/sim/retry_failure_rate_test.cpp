// SPDX-License-Identifier: Apache-2.0
// Brooker's retry study (retry-failure-rate and retry-client-count, docs/models/
// retry-failure-rate.md): a server that fails each call with a fixed probability, and four retry
// strategies. The bounds come from the source's own arithmetic (no retries: success 1 - x; N
// retries: 1 - x^(N+1), load 1 + x + ... + x^N; a bucket earning 0.1 token per operation allows
// about 0.1 retries per operation once drained) and from its orderings, never from a pinned
// figure. Each test pins one failure rate (--set failure_rate=...) and one replication.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"
#include "report/result.hpp"
#include "sim/models/model.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace brooker_retry_test {

namespace sim = backoff::sim;
namespace report = backoff::report;

double load(const report::strategy_summary& s) {
  return static_cast<double>(s.attempts) / static_cast<double>(s.operations);
}

// One plain run of `scenario` at one failure rate (and more overrides), by strategy name.
std::map<std::string, report::strategy_summary> at(const std::string& scenario, double failure,
                                                   std::vector<std::string> sets = {},
                                                   std::uint64_t seed = 1) {
  sets.push_back("failure_rate=" + std::to_string(failure));
  sets.push_back("replications=1");
  if (scenario == "retry-client-count" &&
      std::none_of(sets.begin(), sets.end(),
                   [](const std::string& s) { return s.rfind("clients=", 0) == 0; })) {
    sets.push_back("clients=100");
  }
  return backoff::test::by_name(backoff::test::run_builtin(scenario, sets, seed));
}

// Binomial standard error of a success rate over n operations.
double binomial_se(double p, double n) {
  return std::sqrt(p * (1 - p) / n);
}

}  // namespace brooker_retry_test

namespace {

using namespace brooker_retry_test;

TEST(BrookerRetryFailureRate, NoRetriesSucceedAtOneMinusTheFailureRate) {
  for (double x : {0.05, 0.3}) {
    const auto r = at("retry-failure-rate", x);
    const auto& s = r.at("no-retries");
    // 100 clients x 10/s x 10 s: about 10,000 operations, every one finished by the drain.
    EXPECT_NEAR(static_cast<double>(s.operations), 10'000, 400);
    EXPECT_EQ(s.unfinished, 0U);
    EXPECT_EQ(s.attempts, s.operations);
    // The drain: nothing starts after run.duration (10 s), and the last operation ends soon after.
    for (std::size_t b = 10; b < s.buckets.size(); ++b) EXPECT_EQ(s.buckets[b].new_operations, 0U);
    EXPECT_GT(s.makespan_s, 9.9);
    EXPECT_LT(s.makespan_s, 10.5);
    EXPECT_NEAR(s.success_rate(), 1 - x, 4 * binomial_se(1 - x, 10'000)) << x;
  }
}

TEST(BrookerRetryFailureRate, ThreeRetriesFollowTheGeometricSeries) {
  const double x = 0.3;
  const auto r = at("retry-failure-rate", x);
  const auto& s = r.at("three-retries");
  EXPECT_EQ(s.unfinished, 0U);
  const double success = 1 - std::pow(x, 4);
  const double expected_load = 1 + x + x * x + x * x * x;  // 1.417
  EXPECT_NEAR(s.success_rate(), success, 4 * binomial_se(success, 10'000));
  EXPECT_NEAR(load(s), expected_load, 0.03);
  for (const auto& b : s.buckets) EXPECT_LE(b.attempts, 4 * b.new_operations + 4'000);
}

TEST(BrookerRetryFailureRate, AtHighFailureRatesTheGuardsCutTheLoad) {
  const auto r = at("retry-failure-rate", 0.5);
  const double none = load(r.at("no-retries"));
  const double three = load(r.at("three-retries"));
  const double bucket = load(r.at("token-bucket"));
  const double breaker = load(r.at("breaker"));
  EXPECT_DOUBLE_EQ(none, 1.0);
  EXPECT_NEAR(three, 1.875, 0.04);
  // Drained, a bucket earning 0.1 token per operation pays for about 0.1 retries each, plus each
  // client's first 4 tokens (100 clients x 4 over 10,000 operations): about 1.14.
  EXPECT_GT(bucket, 1.08);
  EXPECT_LT(bucket, 1.2);
  // Failed attempts over first tries is far above 10 %: a client's breaker refuses from its
  // first failure on, unless that came after 10 successes in a row.
  EXPECT_LT(breaker, 1.02);
  EXPECT_GE(breaker, 1.0);
  EXPECT_GT(three, bucket);
  EXPECT_GT(bucket, breaker);

  const double s_three = r.at("three-retries").success_rate();
  const double s_bucket = r.at("token-bucket").success_rate();
  const double s_none = r.at("no-retries").success_rate();
  EXPECT_GT(s_three, s_bucket);
  EXPECT_GT(s_bucket, s_none);
}

TEST(BrookerRetryFailureRate, AtLowFailureRatesEveryRetryingStrategyActsLikeThreeRetries) {
  const auto r = at("retry-failure-rate", 0.02);
  const double three = r.at("three-retries").success_rate();
  EXPECT_GT(three, 0.9995);
  const double none = r.at("no-retries").success_rate();
  EXPECT_LT(none, 0.99);
  EXPECT_GT(r.at("token-bucket").success_rate(), 0.9995);
  EXPECT_NEAR(load(r.at("token-bucket")), load(r.at("three-retries")), 0.002);
  // The breaker counts since the client was made: a failure among a client's first few calls
  // is above 10 % and is not retried, so it falls a little short of three retries.
  const double breaker = r.at("breaker").success_rate();
  EXPECT_GT(breaker, 0.995);
  EXPECT_LT(breaker, three);
  EXPECT_GT(breaker, none + 0.01);
}

TEST(BrookerRetryFailureRate, QuirksOffEarnsPerSuccessAndRetriesLess) {
  // The code earns a token per operation; the prose per success: at 50 % failures the prose's
  // bucket fills half as fast.
  const double code = load(at("retry-failure-rate", 0.5).at("token-bucket"));
  const double prose = load(at("retry-failure-rate", 0.5, {"quirks=false"}).at("token-bucket"));
  EXPECT_LT(prose, code - 0.02);
  EXPECT_GT(prose, 1.03);
}

TEST(BrookerRetryFailureRate, SameSeedSameRunOtherSeedOtherRun) {
  const auto a = at("retry-failure-rate", 0.2, {}, 7);
  const auto b = at("retry-failure-rate", 0.2, {}, 7);
  const auto c = at("retry-failure-rate", 0.2, {}, 8);
  for (const char* name : {"no-retries", "three-retries", "token-bucket", "breaker"}) {
    EXPECT_EQ(a.at(name).attempts, b.at(name).attempts) << name;
    EXPECT_EQ(a.at(name).completed, b.at(name).completed) << name;
    EXPECT_EQ(a.at(name).events, b.at(name).events) << name;
  }
  EXPECT_NE(a.at("three-retries").attempts, c.at("three-retries").attempts);
}

TEST(BrookerRetryClientCount, ManySmallClientsBreakRetriesAndKeepTheirTokens) {
  // 100 calls/s in total. With 1000 clients each makes about two calls (one in the first 10 ms,
  // as sim_loop starts every client then): its breaker, seeing one failure among so few first
  // tries, refuses the retry (no-retries), while its full bucket pays for up to 4 retries (as
  // three-retries). With 10 clients both see enough calls to act on the 5 % rate as designed.
  const double x = 0.05;
  const auto few = at("retry-client-count", x, {"clients=10"});
  const auto many = at("retry-client-count", x, {"clients=1000"});
  // Orderings, not levels: the few-client breaker's success is about 0.987 on average, and one
  // seed's 10 s run moves it by +-0.01.
  EXPECT_GT(few.at("breaker").success_rate(), few.at("no-retries").success_rate() + 0.015);
  EXPECT_GT(few.at("breaker").success_rate(), many.at("breaker").success_rate() + 0.02);
  EXPECT_LT(many.at("breaker").success_rate(), 0.97);
  EXPECT_LT(load(many.at("breaker")), load(few.at("breaker")));

  const auto few_hot = at("retry-client-count", 0.5, {"clients=10"});
  const auto many_hot = at("retry-client-count", 0.5, {"clients=1000"});
  EXPECT_GT(load(many_hot.at("token-bucket")), load(few_hot.at("token-bucket")) + 0.3);
  EXPECT_GT(many_hot.at("token-bucket").success_rate(),
            few_hot.at("token-bucket").success_rate() + 0.1);
}

TEST(BrookerRetryClientCount, SharedGatesMakeOneClientOfMany) {
  // One bucket for all 1000 clients drains like one busy client's: far fewer retries.
  const auto own = at("retry-client-count", 0.5, {"clients=1000"});
  const auto shared = at("retry-client-count", 0.5, {"clients=1000", "gates.shared=true"});
  EXPECT_LT(load(shared.at("token-bucket")) + 0.3, load(own.at("token-bucket")));
}

TEST(BrookerRetryFailureRate, BadKeysAreOneLineErrors) {
  const auto fails = [](std::vector<std::string> sets) {
    sets.push_back("replications=1");
    if (std::none_of(sets.begin(), sets.end(),
                     [](const std::string& s) { return s.rfind("failure_rate=", 0) == 0; })) {
      sets.push_back("failure_rate=0.1");
    }
    try {
      sim::scenario sc =
          sim::scenario::load(backoff::test::builtin_source("retry-failure-rate"), sets);
      (void)sim::make_model(sc);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(fails({"total_rate=100"}).find("total_rate"), std::string::npos);
  EXPECT_NE(fails({"failure_rate=1.5"}).find("failure_rate"), std::string::npos);
  EXPECT_NE(fails({"clients=0"}).find("clients"), std::string::npos);
  EXPECT_EQ(fails({}), "");
}

}  // namespace
