// SPDX-License-Identifier: Apache-2.0
// `backoff proxy` in-process: the toxics' parsing and plans without sockets (Toxics.*), then the
// proxy in front of a net::server or of a small scripted upstream (Proxy.*). Every socket
// operation of the tests is bounded (an io_context run for at most a few seconds), so a proxy
// that hangs fails a test instead of hanging it.
#include "net/proxy/proxy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/http.hpp"
#include "duration_range.hpp"
#include "net/server/server.hpp"

namespace proxy_tests {  // named: the unity build merges the tests' anonymous namespaces

using namespace std::chrono_literals;
using namespace backoff::net;
using namespace backoff::faults;
using backoff::duration;
using backoff::parse_error;
using backoff::random_generator;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

// --- toxics without sockets
// -----------------------------------------------------------------------

std::size_t total_bytes(const chunk_plan& p) {
  std::size_t n = 0;
  for (const piece& x : p.pieces) n += x.bytes;
  return n;
}

duration total_wait(const chunk_plan& p) {
  duration d{0};
  for (const piece& x : p.pieces) d += x.wait;
  return d;
}

toxic_pipe pipe_of(const std::vector<std::string>& specs) {
  std::vector<toxic> all;
  for (const auto& s : specs) all.push_back(parse_toxic(s));
  return toxic_pipe(all);
}

TEST(Toxics, ParseToxiproxysKindsWithTheirDefaults) {
  const toxic l = parse_toxic("latency(latency=100ms, jitter=10ms)");
  EXPECT_EQ(l.kind, toxic_kind::latency);
  EXPECT_EQ(l.latency, 100ms);
  EXPECT_EQ(l.jitter, 10ms);
  EXPECT_EQ(l.toxicity, 1.0);
  EXPECT_EQ(l.stream, toxic_stream::downstream);
  const toxic b = parse_toxic("bandwidth(rate=64KiB/s, stream=upstream, toxicity=50%)");
  EXPECT_EQ(b.bytes_per_s, 65536.0);
  EXPECT_EQ(b.stream, toxic_stream::upstream);
  EXPECT_DOUBLE_EQ(b.toxicity, 0.5);
  const toxic s = parse_toxic("slicer(average_size=64, size_variation=32, delay=1ms)");
  EXPECT_EQ(s.average_size, 64u);
  EXPECT_EQ(s.size_variation, 32u);
  EXPECT_EQ(s.delay, 1ms);
  EXPECT_EQ(parse_toxic("timeout(timeout=2s)").timeout, 2s);
  EXPECT_EQ(parse_toxic("timeout").timeout, 0s);
  EXPECT_EQ(parse_toxic("reset_peer(timeout=0s)").kind, toxic_kind::reset_peer);
  EXPECT_EQ(parse_toxic("limit_data(bytes=1KiB)").bytes, 1024u);
  EXPECT_EQ(parse_byte_size("1MB"), 1'000'000u);
  EXPECT_EQ(parse_byte_size("100B"), 100u);
  EXPECT_EQ(parse_byte_size("2MiB"), 2u << 20);
}

// Each bad spec is one line that quotes the spec and names the bad part.
TEST(Toxics, BadSpecsAreOneLineNamingTheBadPart) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"lag(latency=1s)", "unknown toxic \"lag\""},
      {"latency(delay=1s)", "unknown parameter \"delay\" for latency"},
      {"latency(latency=10ms, jitter=20ms)", "jitter 20ms is more than the latency 10ms"},
      {"latency(latency=ten)", "latency"},
      {"bandwidth(rate=64KiB)", "rate: expected a size per second"},
      {"bandwidth(rate=0/s)", "rate must be more than 0/s"},
      {"bandwidth", "bandwidth needs rate="},
      {"slicer(average_size=8, size_variation=8)", "size_variation must be less than"},
      {"slicer(average_size=0)", "average_size must be at least 1"},
      {"limit_data(bytes=12XB)", "unknown unit \"XB\""},
      {"limit_data", "limit_data needs bytes="},
      {"timeout(timeout=2s, stream=sideways)", "stream: expected downstream or upstream"},
      {"reset_peer(toxicity=150%)", "toxicity"},
      {"latency(latency=1s", "toxic"},
  };
  for (const auto& [spec, part] : cases) {
    try {
      parse_toxic(spec);
      ADD_FAILURE() << spec << " parsed";
    } catch (const parse_error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(part), std::string::npos) << spec << ": " << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

TEST(Toxics, LatencyDelaysEachChunkWithinItsJitter) {
  toxic_pipe p = pipe_of({"latency(latency=100ms, jitter=10ms)"});
  random_generator rng(7);
  duration lo = 1h, hi{0};
  for (int i = 0; i < 2000; ++i) {
    const chunk_plan plan = p.plan(100, rng);
    ASSERT_EQ(plan.pieces.size(), 1u);
    EXPECT_EQ(plan.pieces[0].bytes, 100u);
    lo = std::min(lo, plan.pieces[0].wait);
    hi = std::max(hi, plan.pieces[0].wait);
  }
  EXPECT_GE(lo, 90ms);
  EXPECT_LE(hi, 110ms);
  EXPECT_LT(lo, 92ms);  // the jitter spreads over its whole range
  EXPECT_GT(hi, 108ms);
  EXPECT_FALSE(p.plan(10, rng).close_after);
}

TEST(Toxics, BandwidthTakesTheTimeTheBytesNeedAtTheRate) {
  toxic_pipe p = pipe_of({"bandwidth(rate=10KiB/s)"});
  random_generator rng(1);
  const chunk_plan plan = p.plan(5120, rng);  // half a second's worth
  EXPECT_EQ(total_bytes(plan), 5120u);
  EXPECT_NEAR(backoff::to_seconds(total_wait(plan)), 0.5, 0.001);
  for (const piece& x : plan.pieces) EXPECT_LE(x.bytes, 1024u);  // a tenth of a second each
}

TEST(Toxics, SlicerCutsChunksIntoPiecesWithADelayBetween) {
  toxic_pipe p = pipe_of({"slicer(average_size=64, size_variation=32, delay=1ms)"});
  random_generator rng(3);
  const chunk_plan plan = p.plan(10'000, rng);
  EXPECT_EQ(total_bytes(plan), 10'000u);
  ASSERT_GT(plan.pieces.size(), 10'000u / 96);
  EXPECT_LE(plan.pieces.size(), 10'000u / 32 + 1);
  EXPECT_EQ(plan.pieces[0].wait, 0ms);
  for (std::size_t i = 1; i < plan.pieces.size(); ++i) {
    EXPECT_EQ(plan.pieces[i].wait, 1ms);
    if (i + 1 < plan.pieces.size()) {  // the last one is what is left
      EXPECT_GE(plan.pieces[i].bytes, 32u);
      EXPECT_LE(plan.pieces[i].bytes, 96u);
    }
  }
}

TEST(Toxics, LimitDataCountsAcrossChunksAndClosesAtTheLimit) {
  toxic_pipe p = pipe_of({"limit_data(bytes=100)"});
  random_generator rng(1);
  const chunk_plan first = p.plan(60, rng);
  EXPECT_EQ(total_bytes(first), 60u);
  EXPECT_FALSE(first.close_after);
  const chunk_plan second = p.plan(60, rng);
  EXPECT_EQ(total_bytes(second), 40u);
  EXPECT_TRUE(second.close_after);
  EXPECT_EQ(p.carried(), 100u);
}

TEST(Toxics, ToxicsChainInTheOrderGiven) {
  // Sliced, then each piece's bandwidth: 4 pieces of 25 bytes, each 25 / 1000 s apart at least.
  toxic_pipe p = pipe_of({"slicer(average_size=25, delay=0s)", "bandwidth(rate=1000/s)"});
  random_generator rng(1);
  const chunk_plan plan = p.plan(100, rng);
  ASSERT_EQ(plan.pieces.size(), 4u);
  for (const piece& x : plan.pieces) EXPECT_EQ(x.wait, 25ms);
  // A slow_body fault's rate comes on top of the toxics.
  toxic_pipe none;
  EXPECT_NEAR(backoff::to_seconds(total_wait(none.plan(500, rng, 1000))), 0.5, 0.001);
}

TEST(Toxics, ToxicityIsDrawnOncePerConnection) {
  const std::vector<toxic> all = {parse_toxic("latency(latency=1ms, toxicity=30%)"),
                                  parse_toxic("reset_peer(timeout=5s, stream=upstream)"),
                                  parse_toxic("limit_data(bytes=10, stream=upstream)")};
  random_generator rng(42);
  int latency = 0;
  for (int i = 0; i < 2000; ++i) {
    const connection_toxics c = draw_toxics(all, rng);
    if ((c.applied & (1U << static_cast<unsigned>(toxic_kind::latency))) != 0) {
      ++latency;
      EXPECT_FALSE(c.downstream.empty());
    } else {
      EXPECT_TRUE(c.downstream.empty());
    }
    ASSERT_TRUE(c.reset_after.has_value());
    EXPECT_EQ(*c.reset_after, 5s);
    EXPECT_FALSE(c.upstream.empty());  // limit_data, upstream
  }
  EXPECT_NEAR(latency / 2000.0, 0.3, 0.04);
}

// --- the proxy
// --------------------------------------------------------------------------------------

// A blocking-looking HTTP/1.1 client whose every operation runs for at most `limit`.
class client {
 public:
  explicit client(std::uint16_t port, const std::string& host = "127.0.0.1") : socket_(io_) {
    beast::error_code ec;
    socket_.connect(tcp::endpoint(asio::ip::make_address(host), port), ec);
    EXPECT_FALSE(ec) << ec.message();
  }

  struct reply {
    beast::error_code error;
    http::response<http::string_body> res;
    std::chrono::milliseconds took{0};
  };

  reply request(http::request<http::string_body> req) {
    req.prepare_payload();
    const auto start = steady::now();
    reply r;
    r.error = write(req);
    if (!r.error) r.error = read(r.res);
    r.took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start);
    return r;
  }
  reply get(const std::string& target, const std::string& host = "127.0.0.1") {
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, host);
    return request(std::move(req));
  }

  beast::error_code write(const http::request<http::string_body>& req) {
    beast::error_code result = asio::error::timed_out;
    http::async_write(socket_, req, [&](beast::error_code ec, std::size_t) { result = ec; });
    return run() ? result : asio::error::timed_out;
  }
  beast::error_code write_raw(const std::string& text) {
    beast::error_code result = asio::error::timed_out;
    asio::async_write(socket_, asio::buffer(text),
                      [&](beast::error_code ec, std::size_t) { result = ec; });
    return run() ? result : asio::error::timed_out;
  }
  beast::error_code read(http::response<http::string_body>& res) {
    beast::error_code result = asio::error::timed_out;
    http::async_read(socket_, buffer_, res,
                     [&](beast::error_code ec, std::size_t) { result = ec; });
    return run() ? result : asio::error::timed_out;
  }
  // Every byte until the connection ends (or the limit): the bytes, and how it ended.
  std::pair<std::string, beast::error_code> read_to_end(std::chrono::milliseconds limit = 5s) {
    std::string got(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.clear();
    beast::error_code result = asio::error::timed_out;
    std::array<char, 4096> chunk;
    std::function<void(beast::error_code, std::size_t)> on_read = [&](beast::error_code ec,
                                                                      std::size_t n) {
      got.append(chunk.data(), n);
      if (ec) {
        result = ec;
        return;
      }
      socket_.async_read_some(asio::buffer(chunk), on_read);
    };
    socket_.async_read_some(asio::buffer(chunk), on_read);
    if (!run(limit)) result = asio::error::timed_out;
    return {got, result};
  }

 private:
  // Runs the pending operation for at most `limit`; past it, the socket is closed (the operation
  // then ends with operation_aborted) and the result is false.
  bool run(std::chrono::milliseconds limit = 5s) {
    io_.restart();
    io_.run_for(limit);
    if (io_.stopped()) return true;
    beast::error_code ignored;
    socket_.close(ignored);
    io_.restart();
    io_.run();
    return false;
  }

  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

// A scripted upstream: each connection runs `behaviour` on a thread of its own io_context.
class fake_upstream {
 public:
  using behaviour = std::function<asio::awaitable<void>(tcp::socket&, fake_upstream&)>;

  explicit fake_upstream(behaviour b) : acceptor_(io_), behaviour_(std::move(b)) {
    const tcp::endpoint local(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(local.protocol());
    acceptor_.bind(local);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(io_, accept(), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~fake_upstream() {
    io_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  std::atomic<int> requests{0};
  std::atomic<int> connections{0};

 private:
  asio::awaitable<void> accept() {
    for (;;) {
      tcp::socket s = co_await acceptor_.async_accept(asio::use_awaitable);
      ++connections;
      asio::co_spawn(io_, serve(std::move(s)), asio::detached);
    }
  }
  asio::awaitable<void> serve(tcp::socket s) {
    try {
      co_await behaviour_(s, *this);
    } catch (const std::exception&) {
      // The proxy closed the connection: nothing to do.
    }
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  behaviour behaviour_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// Answers each request with "host=<Host>;body=<bytes>;te=<Transfer-Encoding>" on a kept-alive
// connection.
asio::awaitable<void> echo(tcp::socket& s, fake_upstream& self) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request<http::string_body> req;
    co_await http::async_read(s, buffer, req, asio::use_awaitable);
    ++self.requests;
    http::response<http::string_body> res{http::status::ok, 11};
    res.body() = "host=" + std::string(req[http::field::host]) +
                 ";body=" + std::to_string(req.body().size()) +
                 ";connection=" + std::string(req[http::field::connection]);
    res.keep_alive(true);
    res.prepare_payload();
    co_await http::async_write(s, res, asio::use_awaitable);
  }
}

std::string big_text(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; s.size() < n; ++i) s += std::to_string(i) + ",";
  s.resize(n);
  return s;
}

// Answers with a chunked body: "hello", " world", then 40,000 bytes of big_text().
asio::awaitable<void> chunked(tcp::socket& s, fake_upstream& self) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request<http::string_body> req;
    co_await http::async_read(s, buffer, req, asio::use_awaitable);
    ++self.requests;
    const std::string big = big_text(40'000);
    std::string text =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n";
    char size[16];
    std::snprintf(size, sizeof size, "%zx", big.size());
    text += std::string(size) + "\r\n" + big + "\r\n0\r\n\r\n";
    co_await asio::async_write(s, asio::buffer(text), asio::use_awaitable);
  }
}

// Reads a request and never answers; holds the connection until the proxy closes it.
asio::awaitable<void> silent(tcp::socket& s, fake_upstream& self) {
  std::array<char, 1024> sink;
  ++self.requests;
  for (;;) co_await s.async_read_some(asio::buffer(sink), asio::use_awaitable);
}

// Answers with bytes that are not HTTP.
asio::awaitable<void> garbage(tcp::socket& s, fake_upstream& self) {
  beast::flat_buffer buffer;
  http::request<http::string_body> req;
  co_await http::async_read(s, buffer, req, asio::use_awaitable);
  ++self.requests;
  co_await asio::async_write(s, asio::buffer(std::string("this is not http\r\n\r\n")),
                             asio::use_awaitable);
}

// A body of `n` bytes with Content-Length.
asio::awaitable<void> sized_body(tcp::socket& s, fake_upstream& self, std::size_t n) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request<http::string_body> req;
    co_await http::async_read(s, buffer, req, asio::use_awaitable);
    ++self.requests;
    http::response<http::string_body> res{http::status::ok, 11};
    res.body() = big_text(n);
    res.prepare_payload();
    co_await http::async_write(s, res, asio::use_awaitable);
  }
}

server_options upstream_options() {
  server_options o;
  o.port = 0;
  o.threads = 1;
  o.service.base_delay = 0ms;
  o.service.tick = 5ms;
  return o;
}

proxy_options in_front_of(std::uint16_t port) {
  proxy_options o;
  o.upstream_host = "127.0.0.1";
  o.upstream_port = port;
  o.listen_port = 0;
  o.upstream_timeout = 2s;
  return o;
}

template <class F>
bool eventually(F condition, std::chrono::milliseconds limit = 3000ms) {
  const auto until = steady::now() + limit;
  while (steady::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return condition();
}

TEST(Proxy, ForwardsRequestsOnKeptAliveConnectionsBothSides) {
  server upstream(upstream_options());
  upstream.start();
  proxy p(in_front_of(upstream.port()));
  p.start();
  client c(p.port());
  for (int i = 0; i < 3; ++i) {
    const auto r = c.get("/api");
    ASSERT_FALSE(r.error) << r.error.message();
    EXPECT_EQ(r.res.result_int(), 200u);
    EXPECT_EQ(r.res.body(), "OK");
    EXPECT_TRUE(r.res.keep_alive());
  }
  EXPECT_EQ(upstream.metrics().snapshot().ok, 3u);
  EXPECT_EQ(upstream.metrics().snapshot().connections, 1);  // one upstream connection, reused
  EXPECT_EQ(p.metrics().connections_total.load(), 1u);
  EXPECT_EQ(p.metrics().requests(200), 3u);
  EXPECT_GT(p.metrics().bytes(toxic_stream::downstream), 0u);
}

TEST(Proxy, ReopensTheUpstreamConnectionWhenTheUpstreamClosesIt) {
  fake_upstream up([](tcp::socket& s, fake_upstream& self) -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    co_await http::async_read(s, buffer, req, asio::use_awaitable);
    ++self.requests;
    http::response<http::string_body> res{http::status::ok, 11};
    res.body() = "once";
    res.keep_alive(false);  // one request per connection
    res.prepare_payload();
    co_await http::async_write(s, res, asio::use_awaitable);
  });
  proxy p(in_front_of(up.port()));
  p.start();
  client c(p.port());
  for (int i = 0; i < 3; ++i) {
    const auto r = c.get("/x");
    ASSERT_FALSE(r.error) << r.error.message();
    EXPECT_EQ(r.res.body(), "once");
    EXPECT_TRUE(r.res.keep_alive());  // the client keeps its connection
  }
  EXPECT_EQ(up.connections.load(), 3);
}

TEST(Proxy, HostGoesUnchangedUnlessRewritten) {
  fake_upstream up(echo);
  {
    proxy p(in_front_of(up.port()));
    p.start();
    client c(p.port());
    const auto r = c.get("/", "shop.example:8443");
    ASSERT_FALSE(r.error) << r.error.message();
    EXPECT_EQ(r.res.body(), "host=shop.example:8443;body=0;connection=");  // hop-by-hop removed
  }
  proxy_options o = in_front_of(up.port());
  o.rewrite_host = true;
  proxy p(o);
  p.start();
  client c(p.port());
  const auto r = c.get("/", "shop.example:8443");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.body(), "host=127.0.0.1:" + std::to_string(up.port()) + ";body=0;connection=");
}

TEST(Proxy, AnAbsoluteFormTargetIsForwardedInOriginForm) {
  server upstream(upstream_options());
  upstream.start();
  proxy p(in_front_of(upstream.port()));
  p.start();
  client c(p.port());
  const auto r = c.get("http://127.0.0.1:" + std::to_string(p.port()) + "/api");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.result_int(), 200u);  // the server routes /api, not the absolute form
  const auto m = c.get("http://127.0.0.1:" + std::to_string(p.port()) + "/metrics");
  EXPECT_NE(m.res.body().find("backoff_proxy_requests_total"), std::string::npos);
}

TEST(Proxy, RequestBodiesAreRelayedInChunksWhateverTheirFraming) {
  fake_upstream up(echo);
  proxy p(in_front_of(up.port()));
  p.start();
  client c(p.port());
  http::request<http::string_body> post{http::verb::post, "/upload", 11};
  post.set(http::field::host, "h");
  post.body() = big_text(200'000);  // more than a relay chunk, and more than the header limit
  auto r = c.request(post);
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.body(), "host=h;body=200000;connection=");
  // A chunked request body arrives whole.
  ASSERT_FALSE(
      c.write_raw("POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"));
  http::response<http::string_body> res;
  ASSERT_FALSE(c.read(res));
  EXPECT_EQ(res.body(), "host=h;body=7;connection=");
}

TEST(Proxy, AHeadAnswerKeepsItsLengthAndHasNoBody) {
  server upstream(upstream_options());
  upstream.start();
  proxy p(in_front_of(upstream.port()));
  p.start();
  client c(p.port());
  ASSERT_FALSE(
      c.write_raw("HEAD /api HTTP/1.1\r\nHost: h\r\n\r\nGET /api HTTP/1.1\r\nHost: h\r\n\r\n"));
  const auto [bytes, how] = c.read_to_end(1000ms);  // both answers; the connection stays open
  EXPECT_EQ(how, asio::error::timed_out);
  const auto head_end = bytes.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << bytes;
  EXPECT_NE(bytes.substr(0, head_end).find("Content-Length: 2"), std::string::npos) << bytes;
  EXPECT_EQ(bytes.substr(head_end + 4, 17), "HTTP/1.1 200 OK\r\n") << bytes;  // no body between
  EXPECT_TRUE(bytes.ends_with("\r\n\r\nOK")) << bytes;
}

TEST(Proxy, ASlowBodyFaultRelaysTheUpstreamsBodyAtItsSpeed) {
  fake_upstream up([](tcp::socket& s, fake_upstream& self) { return sized_body(s, self, 4096); });
  proxy_options o = in_front_of(up.port());
  o.faults.faults.push_back({{}, parse_fault("slow_body(size=1KiB, speed=8KiB/s)")});
  proxy p(o);
  p.start();
  client c(p.port());
  const auto r = c.get("/");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.body(), big_text(4096));  // the upstream's body, whole
  EXPECT_GE(r.took, 450ms);                 // half a second at 8 KiB/s
  EXPECT_EQ(p.metrics().faults(counter_slow_body), 1u);
}

TEST(Proxy, AChunkedAnswerIsRelayedChunked) {
  fake_upstream up(chunked);
  proxy p(in_front_of(up.port()));
  p.start();
  client c(p.port());
  for (int i = 0; i < 2; ++i) {  // the connection stays usable after it
    const auto r = c.get("/stream");
    ASSERT_FALSE(r.error) << r.error.message();
    EXPECT_TRUE(r.res.chunked());
    EXPECT_EQ(r.res.body(), "hello world" + big_text(40'000));
  }
  // An HTTP/1.0 client gets the body up to the close instead.
  client old(p.port());
  http::request<http::string_body> req{http::verb::get, "/stream", 10};
  req.set(http::field::host, "h");
  const auto r = old.request(req);
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_FALSE(r.res.chunked());
  EXPECT_EQ(r.res.body(), "hello world" + big_text(40'000));
}

TEST(Proxy, ARefusedUpstreamIs502AndCounted) {
  std::uint16_t closed_port = 0;
  {
    asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    closed_port = a.local_endpoint().port();
  }  // closed: connecting is refused
  proxy p(in_front_of(closed_port));
  p.start();
  client c(p.port());
  for (int i = 0; i < 2; ++i) {
    const auto r = c.get("/api");
    ASSERT_FALSE(r.error) << r.error.message();
    EXPECT_EQ(r.res.result_int(), 502u);
  }
  // With a body it did not read, the proxy closes after its answer, and the client reads it.
  http::request<http::string_body> post{http::verb::post, "/upload", 11};
  post.set(http::field::host, "h");
  post.body() = big_text(300'000);
  const auto r = c.request(post);
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.result_int(), 502u);
  EXPECT_FALSE(r.res.keep_alive());
  EXPECT_EQ(p.metrics().upstream_errors(upstream_error::refused), 3u);
  EXPECT_EQ(p.metrics().requests(502), 3u);
}

TEST(Proxy, ASilentUpstreamIs504AfterTheUpstreamTimeout) {
  fake_upstream up(silent);
  proxy_options o = in_front_of(up.port());
  o.upstream_timeout = 300ms;
  proxy p(o);
  p.start();
  client c(p.port());
  const auto r = c.get("/api");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.result_int(), 504u);
  EXPECT_GE(r.took, 290ms);
  EXPECT_LT(r.took, 3000ms);
  EXPECT_EQ(p.metrics().upstream_errors(upstream_error::timeout), 1u);
  EXPECT_EQ(p.metrics().requests(504), 1u);
}

TEST(Proxy, GarbageFromTheUpstreamIs502) {
  fake_upstream up(garbage);
  proxy p(in_front_of(up.port()));
  p.start();
  client c(p.port());
  const auto r = c.get("/api");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.result_int(), 502u);
  EXPECT_EQ(p.metrics().upstream_errors(upstream_error::bad_response), 1u);
}

TEST(Proxy, AnUpstreamClosingWithoutAnAnswerIs502Reset) {
  fake_upstream up([](tcp::socket& s, fake_upstream& self) -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    co_await http::async_read(s, buffer, req, asio::use_awaitable);
    ++self.requests;
    s.close();
  });
  proxy p(in_front_of(up.port()));
  p.start();
  client c(p.port());
  const auto r = c.get("/api");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.result_int(), 502u);
  EXPECT_EQ(p.metrics().upstream_errors(upstream_error::reset), 1u);
}

TEST(Proxy, AnOversizedRequestHeaderIs400) {
  fake_upstream up(echo);
  proxy p(in_front_of(up.port()));
  p.start();
  client c(p.port());
  http::request<http::string_body> req{http::verb::get, "/", 11};
  req.set(http::field::host, "h");
  req.set("x-big", std::string(10'000, 'a'));
  const auto r = c.request(req);
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.result_int(), 400u);
  EXPECT_EQ(up.requests.load(), 0);
}

TEST(Proxy, MetricsAreTheProxysOwnAndCanMoveAside) {
  server upstream(upstream_options());
  upstream.start();
  {
    proxy p(in_front_of(upstream.port()));
    p.start();
    client c(p.port());
    ASSERT_EQ(c.get("/api").res.result_int(), 200u);
    const auto r = c.get("/metrics");
    ASSERT_FALSE(r.error) << r.error.message();
    EXPECT_NE(r.res.body().find("backoff_proxy_requests_total{status=\"200\"} 1\n"),
              std::string::npos)
        << r.res.body();
    EXPECT_NE(r.res.body().find("backoff_proxy_upstream_errors_total{kind=\"refused\"} 0\n"),
              std::string::npos);
    EXPECT_NE(r.res.body().find("backoff_proxy_faults_total{fault=\"errors\"} 0\n"),
              std::string::npos);
    EXPECT_NE(r.res.body().find("backoff_proxy_toxics_total{toxic=\"latency\"} 0\n"),
              std::string::npos);
    EXPECT_NE(r.res.body().find("backoff_proxy_connections 1\n"), std::string::npos);
  }
  proxy_options o = in_front_of(upstream.port());
  o.metrics_path = "/proxy/metrics";
  proxy p(o);
  p.start();
  client c(p.port());
  const auto upstreams = c.get("/metrics");  // now the server's
  EXPECT_EQ(upstreams.res.body().find("backoff_proxy_"), std::string::npos);
  EXPECT_NE(upstreams.res.body().find("backoff_requests_total"), std::string::npos);
  EXPECT_NE(c.get("/proxy/metrics").res.body().find("backoff_proxy_requests_total"),
            std::string::npos);
}

TEST(Proxy, AnErrorsFaultAnswersWithoutReachingTheUpstream) {
  server upstream(upstream_options());
  upstream.start();
  proxy_options o = in_front_of(upstream.port());
  o.faults.faults.push_back({{}, parse_fault("errors(rate=100%, status=503)")});
  proxy p(o);
  p.start();
  client c(p.port());
  for (int i = 0; i < 2; ++i) {
    const auto r = c.get("/api");
    ASSERT_FALSE(r.error) << r.error.message();
    EXPECT_EQ(r.res.result_int(), 503u);
  }
  EXPECT_EQ(upstream.metrics().snapshot().ok, 0u);
  EXPECT_EQ(upstream.metrics().snapshot().connections, 0);
  EXPECT_EQ(p.metrics().faults(counter_errors), 2u);
  EXPECT_EQ(p.metrics().requests(503), 2u);
}

TEST(Proxy, ALatencyFaultDelaysTheAnswer) {
  server upstream(upstream_options());
  upstream.start();
  proxy_options o = in_front_of(upstream.port());
  o.faults.faults.push_back({{}, parse_fault("latency(delay=200ms)")});
  proxy p(o);
  p.start();
  client c(p.port());
  const auto r = c.get("/api");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.result_int(), 200u);
  EXPECT_GE(r.took, 195ms);
  EXPECT_EQ(p.metrics().faults(counter_latency), 1u);
}

// --- toxics through the proxy
// ---------------------------------------------------------------------

proxy_options with_toxics(std::uint16_t port, const std::vector<std::string>& specs) {
  proxy_options o = in_front_of(port);
  for (const auto& s : specs) o.toxics.push_back(parse_toxic(s));
  return o;
}

TEST(ProxyToxics, LatencyDelaysTheAnswer) {
  server upstream(upstream_options());
  upstream.start();
  proxy p(with_toxics(upstream.port(), {"latency(latency=200ms, jitter=20ms)"}));
  p.start();
  client c(p.port());
  const auto r = c.get("/api");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.body(), "OK");
  EXPECT_GE(r.took, 175ms);
  EXPECT_LT(r.took, 3000ms);
  EXPECT_EQ(p.metrics().toxics(toxic_kind::latency), 1u);
}

TEST(ProxyToxics, UpstreamLatencyDelaysTheRequest) {
  server upstream(upstream_options());
  upstream.start();
  proxy p(with_toxics(upstream.port(), {"latency(latency=200ms, stream=upstream)"}));
  p.start();
  client c(p.port());
  const auto r = c.get("/api");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_GE(r.took, 195ms);
}

TEST(ProxyToxics, BandwidthLimitsTheThroughput) {
  fake_upstream up([](tcp::socket& s, fake_upstream& self) { return sized_body(s, self, 32'768); });
  proxy p(with_toxics(up.port(), {"bandwidth(rate=64KiB/s)"}));
  p.start();
  client c(p.port());
  const auto r = c.get("/big");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.body(), big_text(32'768));
  EXPECT_GE(r.took, 450ms);  // half a second at the rate
  EXPECT_LT(r.took, 4000ms);
}

TEST(ProxyToxics, SlicerDelaysBetweenPiecesAndKeepsTheBytes) {
  fake_upstream up([](tcp::socket& s, fake_upstream& self) { return sized_body(s, self, 1000); });
  proxy p(with_toxics(up.port(), {"slicer(average_size=100, size_variation=0, delay=20ms)"}));
  p.start();
  client c(p.port());
  const auto r = c.get("/");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.body(), big_text(1000));
  EXPECT_GE(r.took, 180ms);  // the body alone is 10 pieces, 9 delays apart
}

TEST(ProxyToxics, TimeoutHoldsTheAnswerThenCloses) {
  server upstream(upstream_options());
  upstream.start();
  proxy p(with_toxics(upstream.port(), {"timeout(timeout=300ms)"}));
  p.start();
  client c(p.port());
  const auto start = steady::now();
  ASSERT_FALSE(c.write_raw("GET /api HTTP/1.1\r\nHost: h\r\n\r\n"));
  const auto [bytes, how] = c.read_to_end();
  const auto took = steady::now() - start;
  EXPECT_EQ(bytes, "");
  EXPECT_EQ(how, asio::error::eof) << how.message();
  EXPECT_GE(took, 250ms);  // from the accept, a moment before `start`
  EXPECT_LT(took, 3000ms);
  EXPECT_EQ(upstream.metrics().snapshot().ok, 1u);  // downstream: the request went through
}

TEST(ProxyToxics, AnUpstreamTimeoutKeepsTheRequestFromTheServer) {
  server upstream(upstream_options());
  upstream.start();
  proxy p(with_toxics(upstream.port(), {"timeout(timeout=200ms, stream=upstream)"}));
  p.start();
  client c(p.port());
  ASSERT_FALSE(c.write_raw("GET /api HTTP/1.1\r\nHost: h\r\n\r\n"));
  const auto [bytes, how] = c.read_to_end();
  EXPECT_EQ(bytes, "");
  EXPECT_EQ(how, asio::error::eof) << how.message();
  EXPECT_EQ(upstream.metrics().snapshot().ok, 0u);
}

TEST(ProxyToxics, TimeoutZeroHoldsUntilTheClientLeaves) {
  server upstream(upstream_options());
  upstream.start();
  proxy p(with_toxics(upstream.port(), {"timeout(timeout=0s)"}));
  p.start();
  client c(p.port());
  ASSERT_FALSE(c.write_raw("GET /api HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_TRUE(eventually([&] { return upstream.metrics().snapshot().ok == 1; }));
  // Nothing comes back for 400 ms, and the client then leaves (its read closes the socket).
  const auto [bytes, how] = c.read_to_end(400ms);
  EXPECT_EQ(bytes, "");
  EXPECT_EQ(how, asio::error::timed_out) << how.message();
  EXPECT_TRUE(eventually([&] { return p.metrics().connections.load() == 0; }));
}

TEST(ProxyToxics, ResetPeerResetsAtOnceOrAfterItsTimeout) {
  server upstream(upstream_options());
  upstream.start();
  {
    proxy p(with_toxics(upstream.port(), {"reset_peer(timeout=0s)"}));
    p.start();
    client c(p.port());
    // The reset may come before the request is written (the write then reports it) or after.
    const beast::error_code wrote = c.write_raw("GET /api HTTP/1.1\r\nHost: h\r\n\r\n");
    const auto [bytes, how] = c.read_to_end();
    EXPECT_EQ(bytes, "");
    EXPECT_TRUE(how == asio::error::connection_reset || wrote == asio::error::connection_reset ||
                wrote == asio::error::broken_pipe)
        << how.message() << ", " << wrote.message();
  }
  proxy p(with_toxics(upstream.port(), {"reset_peer(timeout=300ms)"}));
  p.start();
  client c(p.port());
  const auto start = steady::now();
  const auto first = c.get("/api");  // before the timeout: served
  ASSERT_FALSE(first.error) << first.error.message();
  EXPECT_EQ(first.res.result_int(), 200u);
  const auto [bytes, how] = c.read_to_end();
  EXPECT_EQ(how, asio::error::connection_reset) << how.message();
  EXPECT_GE(steady::now() - start, 250ms);  // from the accept, a moment before `start`
  EXPECT_EQ(p.metrics().toxics(toxic_kind::reset_peer), 1u);
}

TEST(ProxyToxics, LimitDataClosesAfterThatManyBytes) {
  server upstream(upstream_options());
  upstream.start();
  proxy p(with_toxics(upstream.port(), {"limit_data(bytes=20)"}));
  p.start();
  client c(p.port());
  ASSERT_FALSE(c.write_raw("GET /api HTTP/1.1\r\nHost: h\r\n\r\n"));
  const auto [bytes, how] = c.read_to_end();
  EXPECT_EQ(bytes, "HTTP/1.1 200 OK\r\nSer");
  EXPECT_EQ(how, asio::error::eof) << how.message();
}

TEST(ProxyToxics, ToxicityZeroNeverApplies) {
  server upstream(upstream_options());
  upstream.start();
  proxy p(with_toxics(upstream.port(), {"reset_peer(timeout=0s, toxicity=0%)"}));
  p.start();
  for (int i = 0; i < 3; ++i) {
    client c(p.port());
    EXPECT_EQ(c.get("/api").res.result_int(), 200u);
  }
  EXPECT_EQ(p.metrics().toxics(toxic_kind::reset_peer), 0u);
}

TEST(Proxy, ListensOnIpv6Loopback) {
  server upstream(upstream_options());
  upstream.start();
  proxy_options o = in_front_of(upstream.port());
  o.listen_host = "::1";
  std::unique_ptr<proxy> p;
  try {
    p = std::make_unique<proxy>(o);
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  p->start();
  client c(p->port(), "::1");
  EXPECT_EQ(c.get("/api").res.result_int(), 200u);
}

TEST(Proxy, HostAndPortSplitAsTheFlagsWriteThem) {
  std::string host;
  std::uint16_t port = 0;
  EXPECT_TRUE(split_host_port("127.0.0.1:8080", host, port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8080);
  EXPECT_TRUE(split_host_port("[::1]:0", host, port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  EXPECT_TRUE(split_host_port("localhost:80", host, port));
  for (const char* bad :
       {"::1:80", "127.0.0.1", "127.0.0.1:", ":80", "h:65536", "h:8x", "[::1]80"}) {
    EXPECT_FALSE(split_host_port(bad, host, port)) << bad;
  }
}

TEST(Proxy, StopEndsConnectionsHeldByAHang) {
  server upstream(upstream_options());
  upstream.start();
  proxy_options o = in_front_of(upstream.port());
  o.faults.faults.push_back({{}, parse_fault("outage(action=hang)")});
  auto p = std::make_unique<proxy>(o);
  p->start();
  client c(p->port());
  ASSERT_FALSE(c.write_raw("GET /api HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_TRUE(eventually([&] { return p->metrics().faults(counter_outage) == 1; }));
  const auto start = steady::now();
  p->stop();
  p->wait();
  EXPECT_LT(steady::now() - start, 2s);
  const auto [bytes, how] = c.read_to_end();
  EXPECT_EQ(bytes, "");
}

// --- hostile input (issue 39; docs/RELIABILITY.md, "Hostile HTTP") -----------------------------

// What an upstream received, request by request: "METHOD TARGET body=N" for each, parsed by
// Beast apart from the proxy, answered 200 each.
struct recorded {
  std::mutex lock;
  std::vector<std::string> requests;
  std::vector<std::string> via;
  std::vector<std::string> lines() {
    const std::lock_guard guard(lock);
    return requests;
  }
};

fake_upstream::behaviour recording(recorded& into) {
  return [&into](tcp::socket& s, fake_upstream& self) -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> req;
      co_await http::async_read(s, buffer, req, asio::use_awaitable);
      ++self.requests;
      {
        const std::lock_guard guard(into.lock);
        into.requests.push_back(std::string(req.method_string()) + " " + std::string(req.target()) +
                                " body=" + std::to_string(req.body().size()));
        into.via.push_back(std::string(req[http::field::via]));
      }
      http::response<http::string_body> res{http::status::ok, 11};
      res.body() = "ok";
      res.prepare_payload();
      co_await http::async_write(s, res, asio::use_awaitable);
    }
  };
}

// The statuses of the answers on a connection, until it closes or falls silent.
std::vector<int> statuses_until_close(client& c, std::chrono::milliseconds limit = 3s) {
  const auto [bytes, how] = c.read_to_end(limit);
  std::vector<int> out;
  for (std::size_t at = bytes.find("HTTP/1."); at != std::string::npos;
       at = bytes.find("HTTP/1.", at + 1)) {
    if (at != 0 && bytes[at - 1] != '\n') continue;  // in a body, not a status line
    const std::string code = bytes.substr(at + 9, 3);
    if (code.size() == 3 && std::all_of(code.begin(), code.end(), ::isdigit)) {
      out.push_back(std::stoi(code));
    } else {
      ADD_FAILURE() << "no status in " << bytes;
    }
  }
  return out;
}

// The adversarial run: "Connection: Content-Length" made the proxy drop the framing header and
// forward the body raw, which the upstream read as a second request.
TEST(ProxyHostile, AFramingFieldNamedInConnectionStillFramesTheBody) {
  recorded seen;
  fake_upstream up(recording(seen));
  proxy p(in_front_of(up.port()));
  p.start();
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", smuggled.size());
  {
    client c(p.port());
    ASSERT_FALSE(
        c.write_raw("POST /a HTTP/1.1\r\nHost: h\r\nConnection: Content-Length\r\n"
                    "Content-Length: " +
                    std::to_string(smuggled.size()) + "\r\n\r\n" + smuggled));
    http::response<http::string_body> res;
    ASSERT_FALSE(c.read(res));
    EXPECT_EQ(res.result_int(), 200u);
  }
  {
    client c(p.port());
    ASSERT_FALSE(
        c.write_raw("POST /b HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, "
                    "Transfer-Encoding, Host\r\nTransfer-Encoding: chunked\r\n\r\n" +
                    std::string(size) + "\r\n" + smuggled + "\r\n0\r\n\r\n"));
    http::response<http::string_body> res;
    ASSERT_FALSE(c.read(res));
    EXPECT_EQ(res.result_int(), 200u);
  }
  ASSERT_TRUE(eventually([&] { return seen.lines().size() >= 2; }));
  std::this_thread::sleep_for(50ms);  // a smuggled third request would have arrived by now
  const std::string n = std::to_string(smuggled.size());
  EXPECT_EQ(seen.lines(), (std::vector<std::string>{"POST /a body=" + n, "POST /b body=" + n}));
}

TEST(ProxyHostile, AmbiguousFramingIs400AndReachesNoUpstream) {
  recorded seen;
  fake_upstream up(recording(seen));
  proxy p(in_front_of(up.port()));
  p.start();
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::vector<std::pair<std::string, int>> cases = {
      {"Transfer-Encoding: chunked, identity\r\n", 400},
      {"Transfer-Encoding: gzip\r\n", 400},
      {"Transfer-Encoding: xchunked\r\n", 400},
      {"Transfer-Encoding: chunked, chunked\r\n", 400},
      {"Transfer-Encoding: gzip, chunked\r\n", 501},
      {"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", 400},
      {"Content-Length: 3\r\nContent-Length: 4\r\n", 400},
      {"Content-Length: 3, 4\r\n", 400},
      {"Content-Length: +3\r\n", 400},
      {"Host: other\r\n", 400},  // a second Host
  };
  for (const auto& [fields, status] : cases) {
    client c(p.port());
    ASSERT_FALSE(c.write_raw("POST /x HTTP/1.1\r\nHost: h\r\n" + fields +
                             "\r\n3\r\nabc\r\n0\r\n\r\n" + smuggled));
    EXPECT_EQ(statuses_until_close(c), std::vector<int>{status}) << fields;
  }
  client no_host(p.port());
  ASSERT_FALSE(no_host.write_raw("GET /x HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(statuses_until_close(no_host), std::vector<int>{400});
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(seen.lines(), std::vector<std::string>{});
}

// A bad chunk size or extension through the proxy used to close the connection silently.
TEST(ProxyHostile, ABadChunkIs400NotASilentClose) {
  recorded seen;
  fake_upstream up(recording(seen));
  proxy p(in_front_of(up.port()));
  p.start();
  for (const std::string chunk : {"zz\r\nabc\r\n", "-1\r\nabc\r\n", "ffffffffffffffffff\r\nabc\r\n",
                                  "3;\x01\r\nabc\r\n", "3\r\nabcXY"}) {
    client c(p.port());
    ASSERT_FALSE(c.write_raw("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" +
                             chunk + "0\r\n\r\n"));
    EXPECT_EQ(statuses_until_close(c), std::vector<int>{400}) << chunk;
  }
  EXPECT_EQ(seen.lines(), std::vector<std::string>{});  // nothing answered a half request
}

// RFC 9110 section 15.2: a proxy forwards 1xx answers; HTTP/1.0 clients have none.
TEST(ProxyHostile, InterimAnswersReachHttp11ClientsAndNotHttp10Ones) {
  fake_upstream up([](tcp::socket& s, fake_upstream& self) -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> req;
      co_await http::async_read(s, buffer, req, asio::use_awaitable);
      ++self.requests;
      co_await asio::async_write(
          s,
          asio::buffer(std::string("HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
                                   "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")),
          asio::use_awaitable);
    }
  });
  proxy p(in_front_of(up.port()));
  p.start();
  {
    client c(p.port());
    ASSERT_FALSE(c.write_raw("GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
    const auto [bytes, how] = c.read_to_end();
    EXPECT_TRUE(bytes.starts_with("HTTP/1.1 103 Early Hints\r\n")) << bytes;
    EXPECT_NE(bytes.find("Link: </s.css>; rel=preload\r\n"), std::string::npos) << bytes;
    const auto final_at = bytes.find("HTTP/1.1 200 OK\r\n");
    ASSERT_NE(final_at, std::string::npos) << bytes;
    EXPECT_TRUE(bytes.ends_with("\r\n\r\nok")) << bytes;
  }
  {
    client c(p.port());
    ASSERT_FALSE(c.write_raw("GET /x HTTP/1.0\r\nHost: h\r\n\r\n"));
    const auto [bytes, how] = c.read_to_end();
    EXPECT_TRUE(bytes.starts_with("HTTP/1.0 200 OK\r\n")) << bytes;
    EXPECT_EQ(bytes.find(" 103 "), std::string::npos) << bytes;
  }
  EXPECT_EQ(p.metrics().requests(103), 0u);  // not the request's answer
  EXPECT_EQ(p.metrics().requests(200), 2u);
}

TEST(ProxyHostile, AnswersCarryViaAndDate) {
  fake_upstream up([](tcp::socket& s, fake_upstream& self) -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    co_await http::async_read(s, buffer, req, asio::use_awaitable);
    ++self.requests;
    co_await asio::async_write(
        s, asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")),
        asio::use_awaitable);
  });
  proxy p(in_front_of(up.port()));
  p.start();
  client c(p.port());
  const auto r = c.get("/x");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_TRUE(backoff::parse_http_date(std::string(r.res[http::field::date])).has_value()) << r.res;
  EXPECT_NE(std::string(r.res[http::field::via]).find("1.1 backoff-"), std::string::npos) << r.res;
  const auto own = c.get("/metrics");  // the proxy's own answer
  EXPECT_TRUE(backoff::parse_http_date(std::string(own.res[http::field::date])).has_value());
}

// A free loopback port, for a proxy that must know its own port before it exists.
std::uint16_t free_port() {
  asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

// A proxy pointed at itself opened about ten thousand chained connections.
TEST(ProxyHostile, AProxyPointedAtItselfAnswers508AtOnce) {
  proxy_options o = in_front_of(0);
  o.listen_port = free_port();
  o.upstream_port = o.listen_port;
  proxy p(o);
  p.start();
  client c(p.port());
  const auto r = c.get("/x");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.result_int(), 508u);
  EXPECT_LT(r.took, 2000ms);
  EXPECT_EQ(p.metrics().connections_total.load(), 2u);  // the client's, and one round
  EXPECT_TRUE(r.res.keep_alive());
  EXPECT_EQ(c.get("/metrics").res.result_int(), 200u);
}

TEST(ProxyHostile, ALoopThroughAnotherProxyAnswers508) {
  proxy_options first = in_front_of(0);
  first.listen_port = free_port();
  proxy_options second = in_front_of(first.listen_port);
  proxy b(second);  // b -> a
  b.start();
  first.upstream_port = b.port();  // a -> b
  proxy a(first);
  a.start();
  client c(a.port());
  const auto r = c.get("/x");
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.res.result_int(), 508u);
  EXPECT_LE(a.metrics().connections_total.load(), 2u);
  // Two proxies in a chain without a loop pass the request on.
  recorded seen;
  fake_upstream up(recording(seen));
  proxy inner(in_front_of(up.port()));
  inner.start();
  proxy outer(in_front_of(inner.port()));
  outer.start();
  client d(outer.port());
  EXPECT_EQ(d.get("/y").res.result_int(), 200u);
  ASSERT_EQ(seen.lines().size(), 1u);
  const std::lock_guard guard(seen.lock);
  EXPECT_EQ(std::count(seen.via[0].begin(), seen.via[0].end(), ','), 1) << seen.via[0];
}

// 90 connections that each sent one byte held the proxy at its cap for the header timeout.
TEST(ProxyHostile, AtMaxConnectionsHalfSentRequestsMakeRoom) {
  server upstream(upstream_options());
  upstream.start();
  proxy_options o = in_front_of(upstream.port());
  o.max_connections = 3;
  proxy p(o);
  p.start();
  std::vector<std::unique_ptr<client>> holders;
  for (int i = 0; i < 3; ++i) {
    holders.push_back(std::make_unique<client>(p.port()));
    ASSERT_FALSE(holders.back()->write_raw("G"));
  }
  ASSERT_TRUE(eventually([&] { return p.metrics().connections.load() == 3; }));
  std::this_thread::sleep_for(20ms);
  // Each new one stays open, so each needs room: the three half-sent ones go, oldest first.
  for (int i = 0; i < 3; ++i) {
    holders.push_back(std::make_unique<client>(p.port()));
    const auto r = holders.back()->get("/api");
    ASSERT_FALSE(r.error) << r.error.message();
    EXPECT_EQ(r.res.result_int(), 200u) << i;
  }
  EXPECT_EQ(p.metrics().connections_evicted.load(), 3u);
  EXPECT_EQ(p.metrics().connections_refused.load(), 0u);
  for (int i = 0; i < 3; ++i) {  // closed without an answer
    const auto [bytes, how] = holders[static_cast<std::size_t>(i)]->read_to_end(1000ms);
    EXPECT_EQ(bytes, "") << i;
    EXPECT_NE(how, asio::error::timed_out) << i;
  }
}

// The timeouts a flag can set, and the toxics' durations, at the top of their range: each used
// to wrap into the past and fire at the next sweep. The other timeouts are short, so that the
// sweep runs every 50 ms and a wrapped deadline shows within the wait.
TEST(ProxyHostile, DurationsAtTheTopOfTheRangeWaitRatherThanFireAtOnce) {
  server origin(upstream_options());
  origin.start();
  fake_upstream quiet(silent);
  enum class option { header, idle, upstream, reset_peer };
  struct probe {
    std::unique_ptr<proxy> p;
    std::unique_ptr<client> c;
    option what;
    duration top;
  };
  std::vector<probe> probes;
  for (const duration top : backoff::test::top_of_the_range()) {
    for (const option what : {option::header, option::idle, option::upstream, option::reset_peer}) {
      proxy_options o = in_front_of(what == option::upstream ? quiet.port() : origin.port());
      o.header_timeout = o.idle_timeout = o.upstream_timeout = 400ms;
      if (what == option::header) o.header_timeout = top;
      if (what == option::idle) o.idle_timeout = top;
      if (what == option::upstream) o.upstream_timeout = top;
      if (what == option::reset_peer) {
        // Its client sends nothing, so the header timeout would close it first: the top too.
        o.header_timeout = top;
        toxic reset = parse_toxic("reset_peer(timeout=1s)");
        reset.timeout = top;
        o.toxics.push_back(reset);
      }
      probe p{std::make_unique<proxy>(o), nullptr, what, top};
      p.p->start();
      p.c = std::make_unique<client>(p.p->port());
      if (what == option::idle) {
        const auto r = p.c->get("/api");
        EXPECT_EQ(r.res.result_int(), 200u) << r.error.message();
      } else if (what == option::upstream) {
        EXPECT_FALSE(p.c->write_raw("GET /api HTTP/1.1\r\nHost: h\r\n\r\n"));
      }
      probes.push_back(std::move(p));
    }
  }
  std::this_thread::sleep_for(250ms);  // five sweeps
  for (probe& p : probes) {
    const auto [bytes, how] = p.c->read_to_end(1ms);
    EXPECT_EQ(bytes, "") << static_cast<int>(p.what) << " " << p.top.count();
    EXPECT_EQ(how, asio::error::timed_out) << static_cast<int>(p.what) << " " << p.top.count();
  }
  // The toxics' plans at the top of the range: a wait is never negative (latency + jitter, and
  // two latencies, used to wrap), and a bandwidth near zero waits for ever.
  random_generator rng(1);
  for (const duration top : backoff::test::top_of_the_range()) {
    toxic latency = parse_toxic("latency(latency=0s)");
    latency.latency = top;
    latency.jitter = top;
    toxic_pipe pipe({latency, latency});
    for (int i = 0; i < 100; ++i) {
      const auto plan = pipe.plan(10, rng);
      ASSERT_FALSE(plan.pieces.empty());
      EXPECT_GE(plan.pieces.front().wait, duration{0}) << top.count();
    }
  }
  toxic slow = parse_toxic("bandwidth(rate=1B/s)");
  slow.bytes_per_s = 1e-12;
  toxic_pipe crawl({slow});
  const auto plan = crawl.plan(10, rng);
  ASSERT_FALSE(plan.pieces.empty());
  EXPECT_EQ(plan.pieces.front().wait, duration::max());
}

}  // namespace proxy_tests
