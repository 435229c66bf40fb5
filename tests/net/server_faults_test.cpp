// SPDX-License-Identifier: Apache-2.0
// `backoff serve` with faults (docs/NETWORK.md, "Faults on demand"), in-process on a free loopback
// port over real sockets: an injected status, added latency, outage windows that answer, reset
// or hang, a partial outage by header, a slow body, Envoy's fault headers, and their counts in
// /metrics. The decisions themselves are tested on virtual time in faults_test.cpp; here, that
// the server carries them out.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "faults/faults.hpp"
#include "net/server/server.hpp"
#include "test_http_client.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::test::http_client;
namespace fault_http = boost::beast::http;
using steady_clock = std::chrono::steady_clock;

backoff::net::server_options options_with_faults(std::initializer_list<std::string> specs) {
  backoff::net::server_options o;
  o.port = 0;
  o.threads = 1;
  o.service.base_delay = 0ms;  // answered at once: what is measured is the fault
  o.log_every_second = false;
  for (const auto& spec : specs)
    o.faults.faults.push_back({{}, backoff::faults::parse_fault(spec)});
  return o;
}

std::string metrics_text(std::uint16_t port) {
  http_client c(port);
  return c.request(fault_http::verb::get, "/metrics").body();
}

TEST(ServerFaults, AnErrorFaultAnswersItsStatusAndIsCounted) {
  backoff::net::server s(options_with_faults({"errors(rate=100%, status=500)"}));
  s.start();
  http_client c(s.port());
  for (int i = 0; i < 3; ++i) {
    const auto res = c.request(fault_http::verb::get, "/api");
    EXPECT_EQ(res.result_int(), 500u);
    EXPECT_EQ(res.body(), "injected fault\n");
    EXPECT_TRUE(res.keep_alive());  // the connection stays usable
  }
  EXPECT_EQ(s.metrics().snapshot().ok, 0u);
  const std::string text = metrics_text(s.port());
  EXPECT_NE(text.find("backoff_requests_total{status=\"500\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("backoff_faults_total{fault=\"errors\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("backoff_faults_total{fault=\"latency\"} 0\n"), std::string::npos) << text;
  // /metrics itself is never failed: faults apply to /api only.
  EXPECT_EQ(s.metrics().snapshot().ok, 1u);
}

TEST(ServerFaults, LatencyComesBeforeTheAnswer) {
  backoff::net::server s(options_with_faults({"latency(delay=150ms)"}));
  s.start();
  http_client c(s.port());
  const auto start = steady_clock::now();
  const auto res = c.request(fault_http::verb::get, "/api");
  EXPECT_GE(steady_clock::now() - start, 150ms);
  EXPECT_EQ(res.result_int(), 200u);
  EXPECT_EQ(res.body(), "OK");
}

TEST(ServerFaults, AnOutageWindowAnswers503ThenTheServiceComesBack) {
  auto o = options_with_faults({});
  o.faults.faults.push_back(backoff::faults::parse_outage_flag("0s+400ms"));
  backoff::net::server s(o);
  s.start();
  http_client c(s.port());
  EXPECT_EQ(c.request(fault_http::verb::get, "/api").result_int(), 503u);
  std::this_thread::sleep_for(450ms);
  EXPECT_EQ(c.request(fault_http::verb::get, "/api").result_int(), 200u);
  EXPECT_EQ(s.metrics().snapshot().faults[backoff::faults::counter_outage], 1u);
}

TEST(ServerFaults, AResetOutageResetsTheConnection) {
  auto o = options_with_faults({});
  o.faults.faults.push_back(backoff::faults::parse_outage_flag("0s+1h:reset"));
  backoff::net::server s(o);
  s.start();
  http_client c(s.port());
  c.send_raw("GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(c.read_error_within(2000ms), boost::asio::error::connection_reset);
  EXPECT_EQ(s.metrics().snapshot().faults[backoff::faults::counter_outage], 1u);
}

TEST(ServerFaults, AHangOutageHoldsTheRequestUntilItsWindowEnds) {
  auto o = options_with_faults({});
  o.faults.faults.push_back(backoff::faults::parse_outage_flag("0s+300ms:hang"));
  backoff::net::server s(o);
  s.start();
  http_client c(s.port());
  const auto start = steady_clock::now();
  const auto res = c.request(fault_http::verb::get, "/api");
  const auto took = steady_clock::now() - start;
  EXPECT_EQ(res.result_int(), 200u);
  EXPECT_GE(took, 250ms);  // held (the window's end, less the time the server took to start)
  EXPECT_LT(took, 5s);
}

TEST(ServerFaults, AHangWithoutEndIsReleasedByStop) {
  auto o = options_with_faults({"outage(action=hang)"});
  auto s = std::make_unique<backoff::net::server>(o);
  s->start();
  http_client c(s->port());
  c.send_raw("GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  std::this_thread::sleep_for(100ms);
  const auto start = steady_clock::now();
  s->stop();
  s->wait();
  EXPECT_LT(steady_clock::now() - start, 2s);
  EXPECT_TRUE(c.closed_by_server_within(2000ms));
}

TEST(ServerFaults, APartialOutageFailsOneKeyAndServesTheOthers) {
  backoff::net::server s(options_with_faults({"partial(header=x-shard, value=[3], status=503)"}));
  s.start();
  http_client c(s.port());
  EXPECT_EQ(c.request(fault_http::verb::get, "/api", {{"Host", "127.0.0.1"}, {"X-Shard", "3"}})
                .result_int(),
            503u);
  EXPECT_EQ(c.request(fault_http::verb::get, "/api", {{"Host", "127.0.0.1"}, {"X-Shard", "4"}})
                .result_int(),
            200u);
  EXPECT_EQ(c.request(fault_http::verb::get, "/api").result_int(), 200u);
}

TEST(ServerFaults, AKeyedOutageFailsTheKeysInItsShareFromTheirHeader) {
  backoff::net::server s(options_with_faults({"outage(keys=30%, key_header=x-user)"}));
  s.start();
  http_client c(s.port());
  const auto status = [&](const std::string& user) {
    return c.request(fault_http::verb::get, "/api", {{"Host", "127.0.0.1"}, {"X-User", user}})
        .result_int();
  };
  EXPECT_EQ(status("1042"), 503u);  // 42 < 300
  EXPECT_EQ(status("1042"), 503u);  // the same user, the same answer
  EXPECT_EQ(status("1342"), 200u);
  EXPECT_EQ(c.request(fault_http::verb::get, "/api").result_int(), 200u);  // no key: spared
}

TEST(ServerFaults, ASlowBodyArrivesWholeAtItsSpeed) {
  backoff::net::server s(options_with_faults({"slow_body(size=3000B, speed=10KB/s)"}));
  s.start();
  http_client c(s.port());
  const auto start = steady_clock::now();
  const auto res = c.request(fault_http::verb::get, "/api");
  const auto took = steady_clock::now() - start;
  EXPECT_EQ(res.result_int(), 200u);
  EXPECT_EQ(res.body(), std::string(3000, 'x'));
  // Byte n leaves at n / speed: the last piece (500 bytes a twentieth of a second) at 0.25 s.
  EXPECT_GE(took, 240ms);
  // The connection is kept alive; a HEAD answer has the header alone, with the body's length.
  c.send_raw("HEAD /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const auto head = c.read_head();
  EXPECT_EQ(head.result_int(), 200u);
  EXPECT_EQ(head[fault_http::field::content_length], "3000");
  EXPECT_EQ(c.request(fault_http::verb::get, "/api").body().size(), 3000u);
}

TEST(ServerFaults, EnvoyFaultHeadersAreObeyedOnlyWhenEnabled) {
  const std::map<std::string, std::string> abort_429{{"Host", "127.0.0.1"},
                                                     {"x-envoy-fault-abort-request", "429"}};
  {
    backoff::net::server s(options_with_faults({}));
    s.start();
    http_client c(s.port());
    EXPECT_EQ(c.request(fault_http::verb::get, "/api", abort_429).result_int(), 200u);
  }
  auto o = options_with_faults({});
  o.faults.envoy_headers = true;
  backoff::net::server s(o);
  s.start();
  http_client c(s.port());
  EXPECT_EQ(c.request(fault_http::verb::get, "/api", abort_429).result_int(), 429u);
  const auto start = steady_clock::now();
  const auto delayed = c.request(fault_http::verb::get, "/api",
                                 {{"Host", "127.0.0.1"}, {"x-envoy-fault-delay-request", "120"}});
  EXPECT_GE(steady_clock::now() - start, 120ms);
  EXPECT_EQ(delayed.result_int(), 200u);
  const auto snapshot = s.metrics().snapshot();
  EXPECT_EQ(snapshot.faults[backoff::faults::counter_envoy_abort], 1u);
  EXPECT_EQ(snapshot.faults[backoff::faults::counter_envoy_delay], 1u);
}

}  // namespace
