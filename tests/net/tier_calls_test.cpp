// SPDX-License-Identifier: Apache-2.0
// A tier's calls downstream (downstream.hpp): two services of one system file served in-process,
// `a` calling `b` through its edge's strategy. Retries follow the strategy (counted at b), a
// give-up on a "do-not-retry" edge says so upward, the operation's key reaches b, and a propagated
// deadline is the tighter of the attempt's and the call's.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backoff/strategy.hpp"
#include "config/config_reader.hpp"
#include "net/server/server.hpp"
#include "systems/system_spec.hpp"
#include "test_http_client.hpp"

namespace tier_calls_test {

using namespace std::chrono_literals;
namespace net = backoff::net;
namespace systems = backoff::systems;
namespace http = boost::beast::http;
using client = backoff::test::http_client;
using steady = std::chrono::steady_clock;

// Services a (calling b on edge `b`) and b, from `b_keys` and `edge_keys`, resolved under one
// strategy that keeps the edges as written.
systems::system_spec two_tiers(const std::string& b_keys, const std::string& edge_keys) {
  const std::string text =
      "[service.a]\nworkers = 0\ncalls = [{ to = \"b\", edge = \"b\" }]\n"
      "[service.b]\n" +
      b_keys +
      "\n[[clients]]\nto = \"a\"\narrivals = \"poisson(rate=10)\"\n"
      "edge = \"front\"\n[edge.front]\nmax_attempts = 1\n[edge.b]\n" +
      edge_keys + "\n";
  auto root = std::make_shared<toml::table>(toml::parse(text, std::string_view{"calls.toml"}));
  backoff::config::config_reader keys{root, "calls.toml", {}};
  systems::system_spec spec = systems::read_system(keys);
  static const backoff::strategy top;
  static const std::vector<systems::edge_setting> none;
  spec.resolve(std::vector<systems::strategy_edges>{{"as-is", "calls.toml", &top, &none}});
  return spec;
}

// b, then a calling it; both started.
struct pair_of_tiers {
  explicit pair_of_tiers(const systems::system_spec& spec) {
    net::server_options ob;
    ob.port = 0;
    ob.tier = spec.services[1];
    b = std::make_unique<net::server>(ob);
    b->start();
    net::server_options oa;
    oa.port = 0;
    oa.tier = spec.services[0];
    const systems::call_spec& call = spec.services[0].calls[0];
    oa.tier_calls.push_back(
        {call,
         "b",
         spec.services[1].balance,
         {boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), b->port())},
         spec.edge_guards[0][call.edge],
         spec.edge_options_of[0][call.edge],
         spec.services[1].ejection});
    a = std::make_unique<net::server>(oa);
    a->start();
  }
  std::unique_ptr<net::server> b, a;
};

TEST(TierCalls, RetriesFollowTheEdgesStrategyAndAreCountedWhereTheyLand) {
  // Half of b's answers fail; the edge tries three times at once: per call, b sees 1, 2 or 3
  // attempts with probabilities 1/2, 1/4, 1/4 (mean 1.75, sd 0.83), and a fails 1/8 of them.
  const pair_of_tiers t(
      two_tiers("workers = 0\nerrors = \"50%:503\"", "policy = \"none\"\nmax_attempts = 3"));
  client c(t.a->port());
  constexpr int calls = 300;
  int ok = 0;
  for (int i = 0; i < calls; ++i) ok += c.request(http::verb::get, "/api").result_int() == 200;
  const net::metrics_snapshot at_b = t.b->metrics().snapshot();
  const double attempts = static_cast<double>(at_b.ok + at_b.rejected) / calls;
  EXPECT_NEAR(attempts, 1.75, 5 * 0.83 / std::sqrt(double{calls}));  // 5 standard errors
  EXPECT_NEAR(static_cast<double>(ok) / calls, 0.875, 5 * std::sqrt(0.875 * 0.125 / calls));
  EXPECT_EQ(t.a->metrics().snapshot().other_statuses[502 - 100],
            static_cast<std::uint64_t>(calls - ok));
  t.b->stop();
  t.b->wait();
  const auto at_b_figures = t.b->service_figures();
  ASSERT_TRUE(at_b_figures);
  EXPECT_EQ(at_b_figures->total.arrivals, static_cast<std::uint64_t>(calls));  // first attempts
  EXPECT_EQ(at_b_figures->total.attempts, at_b.ok + at_b.rejected);
  EXPECT_EQ(at_b_figures->total.failed, at_b.rejected);  // the fault's answers: served, failed
  EXPECT_EQ(at_b_figures->total.completed, at_b.ok);
}

TEST(TierCalls, AGiveUpOnADoNotRetryEdgeTellsTheCallerNotToRetry) {
  const pair_of_tiers t(
      two_tiers("errors = \"100%:503\"",
                "policy = \"none\"\nmax_attempts = 2\non_give_up = \"do-not-retry\""));
  client c(t.a->port());
  const auto res = c.request(http::verb::get, "/api");
  EXPECT_EQ(res.result_int(), 503u);
  EXPECT_EQ(res["grpc-retry-pushback-ms"], "-1");
  EXPECT_EQ(t.b->metrics().snapshot().rejected, 2u);  // both of the edge's attempts
}

TEST(TierCalls, TheOperationsKeyReachesTheServiceBelow) {
  // Keys 0..499 (mod 1000) are down at b; a passes the key it received down.
  const pair_of_tiers t(
      two_tiers("faults = [{ fault = \"outage(keys=50%)\" }]", "max_attempts = 1"));
  client c(t.a->port());
  const auto with_key = [&](const char* key) {
    return c.request(http::verb::get, "/api", {{"Host", "a"}, {"x-backoff-key", key}}).result_int();
  };
  EXPECT_EQ(with_key("1001"), 502u);  // 1001 mod 1000 = 1: down
  EXPECT_EQ(with_key("999"), 200u);
  EXPECT_EQ(c.request(http::verb::get, "/api").result_int(), 200u);  // no key: spared
}

TEST(TierCalls, APropagatedDeadlineIsTheAttemptsAndExpiresWhereItWaits) {
  // b takes 300 ms on its one worker; each attempt of a's has 60 ms and says so. The first is
  // cut at 60 ms; the second queues behind the first's work and is expired when its turn comes.
  const pair_of_tiers t(two_tiers("workers = 1\nservice_time = \"300ms\"",
                                  "policy = \"none\"\nmax_attempts = 2\n"
                                  "deadline = \"deadline(per_attempt=60ms, propagate=true)\""));
  client c(t.a->port());
  const auto start = steady::now();
  EXPECT_EQ(c.request(http::verb::get, "/api").result_int(), 502u);
  EXPECT_LT(steady::now() - start, 280ms);  // a did not wait for b's work
  const auto until = steady::now() + 3s;
  while (t.b->metrics().snapshot().expired_before_service == 0 && steady::now() < until) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(t.b->metrics().snapshot().expired_before_service, 1u);
}

}  // namespace tier_calls_test
