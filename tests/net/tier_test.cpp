// SPDX-License-Identifier: Apache-2.0
// `backoff serve --system`: one replica of a system file's service served for real, in-process
// on a free loopback port (tier.hpp). Each test sends a handful of requests whose fate the
// service's workers, queue, discipline and accept limit decide by the simulator's rules; the
// service times are long enough (tens of ms) that the order of arrival is the order sent.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/config_reader.hpp"
#include "net/server/server.hpp"
#include "systems/system_spec.hpp"
#include "test_http_client.hpp"

namespace tier_test {

using namespace std::chrono_literals;
namespace net = backoff::net;
namespace systems = backoff::systems;
namespace http = boost::beast::http;
using client = backoff::test::http_client;
using steady = std::chrono::steady_clock;

systems::service_spec service_of(const std::string& service) {
  const std::string text = "[service.api]\n" + service +
                           "\n[[clients]]\nto = \"api\"\narrivals = \"poisson(rate=10)\"\n"
                           "edge = \"front\"\n[edge.front]\nmax_attempts = 1\n";
  auto root = std::make_shared<toml::table>(toml::parse(text, std::string_view{"tier.toml"}));
  backoff::config::config_reader keys{root, "tier.toml", {}};
  return systems::read_system(keys).services.at(0);
}

net::server_options tier_options(const std::string& service) {
  net::server_options o;
  o.port = 0;
  o.tier = service_of(service);
  return o;
}

// One request on its own connection, sent now; its status and when its answer came.
struct sent {
  std::unique_ptr<client> connection;
  std::future<std::pair<int, steady::time_point>> answer;
};

sent send(std::uint16_t port, std::map<std::string, std::string> fields = {}) {
  sent s;
  s.connection = std::make_unique<client>(port);
  fields.emplace("Host", "127.0.0.1");
  http::request<http::empty_body> req{http::verb::get, "/api", 11};
  for (const auto& [name, value] : fields) req.set(name, value);
  s.connection->send_raw([&] {
    std::ostringstream out;
    out << req;
    return out.str();
  }());
  client* c = s.connection.get();
  s.answer = std::async(std::launch::async, [c] {
    const int status = static_cast<int>(c->read().result_int());
    return std::pair{status, steady::now()};
  });
  return s;
}

// Polls the server's metrics until `condition` holds, for up to 5 s.
template <class F>
bool eventually(const net::server& s, F condition) {
  const auto until = steady::now() + 5s;
  while (steady::now() < until) {
    if (condition(s.metrics().snapshot())) return true;
    std::this_thread::sleep_for(1ms);
  }
  return condition(s.metrics().snapshot());
}

TEST(Tier, TwoWorkersAndAQueueOfThreeServeFiveOfEightAndShedThreeAtOnce) {
  net::server_options o = tier_options("workers = 2\nqueue = 3\nservice_time = \"150ms\"");
  o.tier_bucket = 100ms;
  net::server s(o);
  s.start();
  const auto start = steady::now();
  std::vector<sent> requests;
  for (int i = 0; i < 8; ++i) {
    requests.push_back(send(s.port()));
    // Each arrives before the next is sent: the order the queue sees is this one.
    ASSERT_TRUE(eventually(s, [i](const net::metrics_snapshot& m) {
      return m.tier_held + static_cast<std::int64_t>(m.tier_shed[2]) >= std::min(i + 1, 8);
    }));
  }
  const net::metrics_snapshot full = s.metrics().snapshot();
  EXPECT_EQ(full.tier_in_service, 2);
  EXPECT_EQ(full.tier_queued, 3);
  EXPECT_EQ(full.tier_held, 5);
  EXPECT_EQ(full.tier_shed[2], 3u);  // queue_full
  std::vector<std::pair<int, steady::time_point>> answers;
  for (auto& r : requests) answers.push_back(r.answer.get());
  for (int i = 5; i < 8; ++i) EXPECT_EQ(answers[i].first, 503) << i;
  // fifo on two workers: requests 0 and 1 at 150 ms, 2 and 3 at 300 ms, 4 at 450 ms.
  const int waves[5] = {1, 1, 2, 2, 3};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(answers[i].first, 200) << i;
    EXPECT_GE(answers[i].second - start, waves[i] * 150ms) << i;
  }
  EXPECT_LT(answers[4].second - answers[0].second, 450ms);
  EXPECT_EQ(s.metrics().snapshot().tier_held, 0);
  s.stop();
  s.wait();
  // Counted as the simulator counts a service.
  const auto figures = s.service_figures();
  ASSERT_TRUE(figures);
  EXPECT_EQ(figures->total.attempts, 8u);
  EXPECT_EQ(figures->total.arrivals, 8u);  // none said it was a retry
  EXPECT_EQ(figures->total.completed, 5u);
  EXPECT_EQ(figures->total.rejected, 3u);
  EXPECT_EQ(figures->total.failed, 0u);
  EXPECT_EQ(figures->total.peak_in_flight, 5);
  EXPECT_EQ(figures->total.peak_queue, 3);
  EXPECT_EQ(figures->latency.count(), 5u);
  // The fifth waited two works, then did its own (from its arrival, a little after `start`).
  EXPECT_GE(figures->latency.max(), 400'000'000);
  std::uint64_t attempts = 0, completed = 0;
  for (const auto& b : figures->buckets) {
    attempts += b.attempts;
    completed += b.completed;
    EXPECT_LE(b.peak_in_flight, 5);
  }
  EXPECT_EQ(attempts, 8u);
  EXPECT_EQ(completed, 5u);
  EXPECT_GE(figures->buckets.size(), 5u);  // 100 ms buckets over at least 450 ms
}

TEST(Tier, LifoServesTheNewestWaitingRequestFirst) {
  net::server s(
      tier_options("workers = 1\nqueue = 3\ndiscipline = \"lifo\"\n"
                   "service_time = \"80ms\""));
  s.start();
  std::vector<sent> requests;
  for (int i = 0; i < 4; ++i) {
    requests.push_back(send(s.port()));
    ASSERT_TRUE(eventually(s, [i](const net::metrics_snapshot& m) { return m.tier_held > i; }));
  }
  std::vector<steady::time_point> done;
  for (auto& r : requests) {
    const auto [status, at] = r.answer.get();
    EXPECT_EQ(status, 200);
    done.push_back(at);
  }
  // 0 on the worker; then 3, 2, 1 (newest first).
  EXPECT_LT(done[0], done[3]);
  EXPECT_LT(done[3], done[2]);
  EXPECT_LT(done[2], done[1]);
}

TEST(Tier, TheAcceptLimitResetsTheConnectionOfARequestBeyondIt) {
  net::server s(tier_options("workers = 1\nmax_connections = 1\nservice_time = \"100ms\""));
  s.start();
  sent first = send(s.port());
  ASSERT_TRUE(eventually(s, [](const net::metrics_snapshot& m) { return m.tier_held == 1; }));
  client second(s.port());
  second.send_raw("GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_TRUE(second.closed_by_server());  // reset at once, no answer
  EXPECT_EQ(first.answer.get().first, 200);
  EXPECT_EQ(s.metrics().snapshot().tier_shed[0], 1u);  // refused
}

TEST(Tier, ARequestWhoseDeadlinePassedBeforeItsWorkIsAnswered504) {
  net::server s(tier_options("workers = 1\nservice_time = \"100ms\""));
  s.start();
  sent first = send(s.port());
  ASSERT_TRUE(eventually(s, [](const net::metrics_snapshot& m) { return m.tier_held == 1; }));
  // 20 ms left, 100 ms in the queue: expired when its work starts; it costs expired_cost (0).
  sent late = send(s.port(), {{"grpc-timeout", "20m"}});
  EXPECT_EQ(first.answer.get().first, 200);
  const auto [status, at] = late.answer.get();
  EXPECT_EQ(status, 504);
  EXPECT_EQ(s.metrics().snapshot().expired_before_service, 1u);
}

TEST(Tier, APauseStopsTheWorkUnderWayAndTheResumeLetsItFinish) {
  net::server s(tier_options("workers = 1\nservice_time = \"60ms\""));
  s.start();
  sent r = send(s.port());
  ASSERT_TRUE(eventually(s, [](const net::metrics_snapshot& m) { return m.tier_in_service == 1; }));
  s.pause();
  EXPECT_EQ(r.answer.wait_for(200ms), std::future_status::timeout);
  const auto resumed = steady::now();
  s.resume();
  const auto [status, at] = r.answer.get();
  EXPECT_EQ(status, 200);
  EXPECT_LT(at - resumed, 60ms + 150ms);  // it went on at once
}

TEST(Tier, MetricsShowTheTiersGauges) {
  net::server s(
      tier_options("workers = 3\nlimit = \"concurrency(max=7)\"\nservice_time = \"1ms\""));
  s.start();
  client c(s.port());
  EXPECT_EQ(c.request(http::verb::get, "/api").result_int(), 200u);
  const std::string text = c.request(http::verb::get, "/metrics").body();
  EXPECT_NE(text.find("backoff_tier_workers 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("backoff_tier_admission_limit 7\n"), std::string::npos);
  EXPECT_NE(text.find("backoff_tier_shed_total{reason=\"queue_full\"} 0\n"), std::string::npos);
}

}  // namespace tier_test
