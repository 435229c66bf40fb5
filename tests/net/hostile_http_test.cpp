// SPDX-License-Identifier: Apache-2.0
// The classes of hostile HTTP input an adversarial run found in `backoff serve` and `backoff load`
// (docs/RELIABILITY.md, "Hostile HTTP"), each with the tests that would have caught it: framing
// that is not exactly chunked or not one Content-Length, two Host fields, interim (1xx) answers,
// Date, connections that hold the cap with one byte each, and durations at the top of the range.
// The proxy's side of the same classes is in proxy_test.cpp (ProxyHostile.*); the differential
// test against h11 is tests/net/http_differential.py.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/http.hpp"
#include "duration_range.hpp"
#include "net/client/load.hpp"
#include "net/server/handler.hpp"
#include "net/server/server.hpp"
#include "test_http_client.hpp"

namespace hostile_http_tests {  // named: the unity build merges the tests' anonymous namespaces

using namespace std::chrono_literals;
using namespace backoff::net;
using backoff::duration;
namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using client = backoff::test::http_client;
using steady = std::chrono::steady_clock;

// A request header with these fields in this order (duplicates kept, as a parser keeps them).
http::request<http::string_body> request_with(
    unsigned version, const std::vector<std::pair<std::string, std::string>>& fields) {
  http::request<http::string_body> req{http::verb::post, "/api", version};
  for (const auto& [name, value] : fields) req.insert(name, value);
  return req;
}

// --- refuse_framing, without sockets ----------------------------------------------------------

TEST(HostileFraming, OnlyASingleChunkedCodingIsAccepted) {
  struct row {
    std::vector<std::pair<std::string, std::string>> fields;
    std::optional<unsigned> status;  // nullopt: accepted
  };
  const std::vector<std::pair<std::string, std::string>> host = {{"Host", "127.0.0.1"}};
  const auto with_host = [&](std::vector<std::pair<std::string, std::string>> more) {
    more.insert(more.begin(), host.begin(), host.end());
    return more;
  };
  const std::vector<row> rows = {
      {with_host({{"Transfer-Encoding", "chunked"}}), std::nullopt},
      {with_host({{"Transfer-Encoding", "Chunked"}}), std::nullopt},  // names ignore case
      {with_host({{"Transfer-Encoding", "chunked, identity"}}), 400},
      {with_host({{"Transfer-Encoding", "gzip"}}), 400},
      {with_host({{"Transfer-Encoding", "xchunked"}}), 400},
      {with_host({{"Transfer-Encoding", "chunked, chunked"}}), 400},
      {with_host({{"Transfer-Encoding", "identity"}}), 400},
      {with_host({{"Transfer-Encoding", ""}}), 400},
      {with_host({{"Transfer-Encoding", ","}}), 400},
      {with_host({{"Transfer-Encoding", "chunked;q=1"}}), 400},
      {with_host({{"Transfer-Encoding", "chunked x"}}), 400},
      {with_host({{"Transfer-Encoding", "gzip, chunked"}}), 501},
      {with_host({{"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}}), 400},
      {with_host({{"Transfer-Encoding", ""}, {"Transfer-Encoding", "chunked"}}), 400},
      {{{"Host", "a"}, {"Host", "b"}}, 400},
      {{{"Host", "localhost"}, {"Host", "localhost"}}, 400},  // even the same one twice
      {{}, 400},                                              // HTTP/1.1 needs a Host
      {{{"Host", "evil.example com"}}, 400},
      {{{"Host", "a/b"}}, 400},
      {{{"Host", "[::1]:8070"}}, std::nullopt},
      {{{"Host", "localhost:8070"}}, std::nullopt},
      {{{"Host", ""}}, std::nullopt},  // RFC 9112 section 3.2: empty when there is no authority
  };
  for (const row& r : rows) {
    const auto refused = refuse_framing(request_with(11, r.fields));
    std::string shown;
    for (const auto& [name, value] : r.fields) shown += name + ": " + value + "; ";
    if (!r.status) {
      EXPECT_FALSE(refused) << shown << (refused ? refused->why : "");
      continue;
    }
    ASSERT_TRUE(refused) << shown;
    EXPECT_EQ(static_cast<unsigned>(refused->status), *r.status) << shown;
    EXPECT_FALSE(refused->why.empty());
    EXPECT_EQ(refused->why.find('\n'), std::string::npos);
  }
  // HTTP/1.0 has no transfer codings (RFC 9112 section 6.1), and needs no Host.
  EXPECT_TRUE(refuse_framing(request_with(10, {{"Transfer-Encoding", "chunked"}})));
  EXPECT_FALSE(refuse_framing(request_with(10, {})));
}

// --- serve over sockets -----------------------------------------------------------------------

server_options quick() {
  server_options o;
  o.port = 0;
  o.threads = 1;
  o.service.base_delay = 0ms;
  o.service.tick = 5ms;
  return o;
}

// The bytes the server sends until it closes the connection (at most `limit`).
std::string answers_until_close(client& c, std::chrono::milliseconds limit = 3s) {
  std::string got;
  const auto until = steady::now() + limit;
  while (steady::now() < until &&
         c.readable_within(
             std::chrono::duration_cast<std::chrono::milliseconds>(until - steady::now()))) {
    try {
      const auto res = c.read();
      got += std::to_string(res.result_int()) + " ";
    } catch (const std::exception&) {
      break;  // closed
    }
  }
  return got;
}

// The adversarial run's smuggling: a body the server cannot frame must not be read as the next
// request. Each body below carries a whole second request; a 404 for /smuggled means it was.
TEST(HostileServe, ATransferCodingThatIsNotExactlyChunkedIs400OrUnsupportedAndCloses) {
  server s(quick());
  s.start();
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"chunked, identity", "400 "},
      {"gzip", "400 "},
      {"xchunked", "400 "},
      {"chunked, chunked", "400 "},
      {"identity", "400 "},
      {"gzip, chunked", "501 "},
      {"chunked\r\nTransfer-Encoding: chunked", "400 "},
  };
  char size[16];
  std::snprintf(size, sizeof size, "%zx", smuggled.size());
  // A valid chunked body whose chunk is a request, then that request again: a server that takes
  // the body as empty reads the chunk's size line next (a 400, after a 200), and one that takes
  // it as chunked and serves it reads the request after it (a 404).
  const std::string body = std::string(size) + "\r\n" + smuggled + "\r\n0\r\n\r\n" + smuggled;
  for (const auto& [coding, expected] : cases) {
    client c(s.port());
    c.send_raw("POST /api HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: " + coding +
               "\r\n\r\n" + body);
    EXPECT_EQ(answers_until_close(c), expected) << coding;
  }
  const auto m = s.metrics().snapshot();
  EXPECT_EQ(m.not_found, 0u);
  EXPECT_EQ(m.ok, 0u);
}

TEST(HostileServe, AChunkedBodyIsStillServedAndTheConnectionGoesOn) {
  server s(quick());
  s.start();
  client c(s.port());
  c.send_raw(
      "POST /api HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\n\r\nGET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(c.read().result_int(), 200u);
  EXPECT_EQ(c.read().result_int(), 200u);
}

// The admin guard read the first Host only: "Host: localhost" then "Host: evil.example" passed.
TEST(HostileServe, TwoHostFieldsAre400AndNeverReachTheAdminCheck) {
  server s(quick());
  s.start();
  client c(s.port());
  c.send_raw(
      "POST /admin/pause HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n"
      "Content-Length: 0\r\n\r\n");
  const auto res = c.read();
  EXPECT_EQ(res.result_int(), 400u);
  EXPECT_NE(res.body().find("more than one Host"), std::string::npos) << res.body();
  EXPECT_TRUE(c.closed_by_server_within(3000ms));
  client after(s.port());
  EXPECT_EQ(after.request(http::verb::get, "/api").result_int(), 200u);  // not paused
}

// RFC 9110 section 6.6.1: an origin server with a clock sends Date in its answers.
TEST(HostileServe, EveryAnswerCarriesTodaysDate) {
  server s(quick());
  s.start();
  client c(s.port());
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  const auto check = [&](const http::response<http::string_body>& res) {
    const auto date = backoff::parse_http_date(std::string(res[http::field::date]));
    ASSERT_TRUE(date) << res;
    EXPECT_GE(*date, now - 5s);
    EXPECT_LE(*date, now + 60s);
  };
  check(c.request(http::verb::get, "/api"));  // the prepared answer
  check(c.request(http::verb::get, "/nowhere"));
  check(c.request(http::verb::get, "/metrics"));
  client bad(s.port());
  bad.send_raw("NOT-HTTP\r\n\r\n");
  check(bad.read());
}

// 90 connections that each sent one byte held a server at its cap for the whole header timeout.
TEST(HostileServe, AtMaxConnectionsHalfSentRequestsMakeRoomForNewOnes) {
  server_options o = quick();
  o.max_connections = 4;
  server s(o);
  s.start();
  std::vector<std::unique_ptr<client>> holders;
  for (int i = 0; i < 4; ++i) {
    holders.push_back(std::make_unique<client>(s.port()));
    holders.back()->send_raw("G");
  }
  const auto deadline = steady::now() + 3s;
  while (s.metrics().snapshot().connections < 4 && steady::now() < deadline) {
    std::this_thread::sleep_for(2ms);
  }
  std::this_thread::sleep_for(20ms);  // each one's byte read: they are half-sent now
  // Each new one stays open, so each needs room: the half-sent ones go, oldest first.
  for (int i = 0; i < 3; ++i) {
    holders.push_back(std::make_unique<client>(s.port()));
    EXPECT_EQ(holders.back()->request(http::verb::get, "/api").result_int(), 200u) << i;
  }
  EXPECT_EQ(s.metrics().snapshot().evicted, 3u);
  EXPECT_EQ(s.metrics().snapshot().refused, 0u);
  // Three of the four half-sent ones went (the longest waiting: which three depends on when the
  // server read each one's byte); the new ones, answered, stay.
  int closed = 0;
  for (std::size_t i = 0; i < 4; ++i) closed += holders[i]->closed_by_server_within(300ms) ? 1 : 0;
  EXPECT_EQ(closed, 3);
  for (std::size_t i = 4; i < holders.size(); ++i) {
    EXPECT_FALSE(holders[i]->closed_by_server_within(1ms)) << i;
  }
}

// The timeouts a flag can set, at the top of their range: each used to wrap into the past and
// close every connection at the next sweep. The other timeout is short, so that the sweep runs
// every 50 ms and a wrapped deadline shows within the wait.
TEST(HostileServe, TimeoutsAtTheTopOfTheRangeWaitRatherThanFireAtOnce) {
  struct probe {
    std::unique_ptr<server> s;
    std::unique_ptr<client> idle, half, kept;
    duration top;
  };
  std::vector<probe> probes;
  for (const duration top : backoff::test::top_of_the_range()) {
    for (const bool header : {true, false}) {
      server_options o = quick();
      o.header_timeout = header ? top : duration{400ms};
      o.idle_timeout = header ? duration{400ms} : top;
      probe p{std::make_unique<server>(o), nullptr, nullptr, nullptr, top};
      p.s->start();
      if (header) {
        p.idle = std::make_unique<client>(p.s->port());
        p.half = std::make_unique<client>(p.s->port());
        p.half->send_raw("GET /api HTTP/1.1\r\n");
      } else {
        p.kept = std::make_unique<client>(p.s->port());
        EXPECT_EQ(p.kept->request(http::verb::get, "/api").result_int(), 200u);
      }
      probes.push_back(std::move(p));
    }
  }
  std::this_thread::sleep_for(250ms);  // five sweeps
  for (probe& p : probes) {
    if (p.idle) {
      EXPECT_FALSE(p.idle->closed_by_server_within(1ms)) << "header-timeout " << p.top.count();
      EXPECT_FALSE(p.half->closed_by_server_within(1ms)) << "header-timeout " << p.top.count();
      p.half->send_raw("Host: 127.0.0.1\r\n\r\n");
      EXPECT_EQ(p.half->read().result_int(), 200u);
    } else {
      EXPECT_FALSE(p.kept->closed_by_server_within(1ms)) << "idle-timeout " << p.top.count();
      EXPECT_EQ(p.kept->request(http::verb::get, "/api").result_int(), 200u);
    }
  }
}

// `serve --retry-after 9223372036854770000ns` crashed on its first rejection.
TEST(HostileServe, ARetryAfterAtTheTopOfTheRangeIsRenderedRoundedUp) {
  EXPECT_EQ(make_rejection(http::status::service_unavailable, duration{9'223'372'036'854'770'000},
                           11, true)[http::field::retry_after],
            "9223372037");
  EXPECT_EQ(make_rejection(http::status::service_unavailable, duration::max(), 11,
                           true)[http::field::retry_after],
            "9223372037");
  server_options o = quick();
  o.max_busy = 1;
  o.retry_after = duration{9'223'372'036'854'770'000};
  o.service.base_delay = 10s;
  server s(o);
  s.start();
  client busy(s.port());
  busy.send_raw("GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const auto deadline = steady::now() + 3s;
  while (s.metrics().concurrency.load() < 1 && steady::now() < deadline) {
    std::this_thread::sleep_for(2ms);
  }
  client rejected(s.port());
  const auto res = rejected.request(http::verb::get, "/api");
  EXPECT_EQ(res.result_int(), 503u);
  EXPECT_EQ(res[http::field::retry_after], "9223372037");
}

// The one helper every `now + timeout` goes through, over the whole range of a duration.
RC_GTEST_PROP(DurationRange, SaturatingAddNeverWrapsIntoThePast, ()) {
  const auto now = steady::time_point(steady::duration(
      *rc::gen::inRange<std::int64_t>(0, std::numeric_limits<std::int64_t>::max())));
  const duration d{*rc::gen::inRange<std::int64_t>(0, std::numeric_limits<std::int64_t>::max())};
  const auto sum = backoff::saturating_add(now, d);
  RC_ASSERT(sum >= now);
  const auto room = steady::time_point::max() - now;
  if (d <= room) {
    RC_ASSERT(sum - now == d);
  } else {
    RC_ASSERT(sum == steady::time_point::max());
  }
  const duration e{*rc::gen::inRange<std::int64_t>(0, std::numeric_limits<std::int64_t>::max())};
  const duration both = backoff::saturating_add(d, e);
  RC_ASSERT(both >= d);
  RC_ASSERT(both >= e);
  RC_ASSERT(both == (d > duration::max() - e ? duration::max() : d + e));
}

// Retry-After is the duration in whole seconds rounded up, for every duration.
RC_GTEST_PROP(DurationRange, RetryAfterIsTheCeilingInSecondsOverTheWholeRange, ()) {
  const std::int64_t ns = *rc::gen::oneOf(
      rc::gen::inRange<std::int64_t>(0, std::numeric_limits<std::int64_t>::max()),
      rc::gen::inRange<std::int64_t>(std::numeric_limits<std::int64_t>::max() - 2'000'000'000,
                                     std::numeric_limits<std::int64_t>::max()));
  const auto res = make_rejection(http::status::too_many_requests, duration{ns}, 11, true);
  const std::string text(res[http::field::retry_after]);
  const std::uint64_t seconds = std::stoull(text);
  RC_ASSERT(seconds * 1'000'000'000ULL >= static_cast<std::uint64_t>(ns));
  RC_ASSERT(seconds == 0 || (seconds - 1) * 1'000'000'000ULL < static_cast<std::uint64_t>(ns));
}

RC_GTEST_PROP(DurationRange, HttpDatesRoundTripAndSortAsTime, ()) {
  const std::int64_t lowest = -62'135'596'800;   // 0001-01-01T00:00:00Z
  const std::int64_t highest = 253'402'300'799;  // 9999-12-31T23:59:59Z
  const std::chrono::sys_seconds t{
      std::chrono::seconds{*rc::gen::inRange<std::int64_t>(lowest, highest + 1)}};
  const std::string text = backoff::format_http_date(t);
  RC_ASSERT(text.size() == 29u);
  RC_ASSERT(text.ends_with(" GMT"));
  const auto back = backoff::parse_http_date(text);
  RC_ASSERT(back.has_value());
  RC_ASSERT(*back == t);
}

TEST(DurationRange, HttpDatesAreImfFixdateAndClampToFourDigitYears) {
  EXPECT_EQ(backoff::format_http_date(std::chrono::sys_seconds{std::chrono::seconds{784111777}}),
            "Sun, 06 Nov 1994 08:49:37 GMT");  // RFC 9110 section 5.6.7's example
  EXPECT_EQ(backoff::format_http_date(std::chrono::sys_seconds{std::chrono::seconds{0}}),
            "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(backoff::format_http_date(std::chrono::sys_seconds::max()),
            "Fri, 31 Dec 9999 23:59:59 GMT");
  EXPECT_EQ(backoff::format_http_date(std::chrono::sys_seconds::min()),
            "Mon, 01 Jan 0001 00:00:00 GMT");
}

// --- load skips interim answers ---------------------------------------------------------------

// A server that answers every request with a 103 Early Hints, then the real answer: 200.
class early_hints_server {
 public:
  early_hints_server() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(io_, accept(), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~early_hints_server() {
    io_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  std::atomic<int> requests{0};

 private:
  asio::awaitable<void> accept() {
    for (;;) {
      auto socket = co_await acceptor_.async_accept(asio::use_awaitable);
      asio::co_spawn(io_, serve(std::move(socket)), asio::detached);
    }
  }
  asio::awaitable<void> serve(tcp::socket socket) {
    try {
      std::string buffer;
      for (;;) {
        const std::size_t n = co_await asio::async_read_until(socket, asio::dynamic_buffer(buffer),
                                                              "\r\n\r\n", asio::use_awaitable);
        buffer.erase(0, n);
        ++requests;
        static const std::string answer =
            "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
            "HTTP/1.1 100 Continue\r\n\r\n"
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK";
        co_await asio::async_write(socket, asio::buffer(answer), asio::use_awaitable);
      }
    } catch (const std::exception&) {
      // The client closed the connection.
    }
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// load took the 103 for the answer and gave the real 200 to the next request: half miscounted.
TEST(HostileLoad, InterimAnswersAreSkippedAndEveryRequestGetsItsOwnAnswer) {
  early_hints_server upstream;
  load_options o;
  o.target.port = upstream.port();
  o.clients = 2;
  o.think_mean = 1ms;
  o.timeout = 2s;
  o.duration_total = 300ms;
  o.report_every = 10s;
  const auto run = run_load(o, {});
  EXPECT_GT(run.ok, 10u);
  EXPECT_EQ(run.errors, 0u);
  EXPECT_EQ(run.timeouts, 0u);
  // Every request answered once, but for those still in flight when the run ended (one a client).
  const auto sent = static_cast<std::uint64_t>(upstream.requests.load());
  EXPECT_LE(run.ok, sent);
  EXPECT_GE(run.ok + o.clients, sent);
}

}  // namespace hostile_http_tests
