// SPDX-License-Identifier: Apache-2.0
// `backoff load` sends what the simulator's callers send and honours gRPC's pushback: every
// attempt after an operation's first says how long ago that one left
// (x-backoff-since-first-attempt), with send_key every attempt says its operation's key
// (x-backoff-key), with propagate_deadline the time sent is the attempt's, cut to the operation's
// deadline; a grpc-retry-pushback-ms answer is the wait itself, or, negative, ends the operation
// without a retry. Against a scripted server that records each request, and against `backoff
// serve` with a per-key outage and a fading errors fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backoff/deadline_headers.hpp"
#include "backoff/hedge.hpp"
#include "backoff/random.hpp"
#include "faults/faults.hpp"
#include "net/client/load.hpp"
#include "net/client/reply.hpp"
#include "net/server/server.hpp"

namespace load_headers_tests {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using backoff::duration;
using backoff::verdict_kind;
using backoff::net::load_options;
using backoff::net::run_load;
using backoff::net::load_detail::classify_reply;
using backoff::net::load_detail::reply;
using backoff::net::load_detail::reply_kind;

// A field's value in a request's head ("Name: value\r\n", the name in any case), or nullopt.
std::optional<std::string> field_of(std::string_view head, std::string_view name) {
  for (std::size_t at = head.find("\r\n"); at != std::string_view::npos;) {
    const std::size_t start = at + 2;
    const std::size_t end = head.find("\r\n", start);
    if (end == std::string_view::npos) break;
    const std::string_view line = head.substr(start, end - start);
    const std::size_t colon = line.find(':');
    if (colon == name.size() &&
        std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      return std::string(value);
    }
    at = end;
  }
  return std::nullopt;
}

// A number of milliseconds as a fading fault reads it (std::from_chars, the whole text).
std::optional<double> milliseconds_of(const std::string& text) {
  double ms = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return ms;
}

// A server that answers every request with the same bytes and keeps each request's head.
class scripted_server {
 public:
  explicit scripted_server(std::string answer)
      : answer_(std::move(answer)),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(io_, accept(), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  scripted_server(const scripted_server&) = delete;
  scripted_server& operator=(const scripted_server&) = delete;
  ~scripted_server() {
    io_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  std::vector<std::string> heads() const {
    const std::lock_guard lock(mutex_);
    return heads_;
  }

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
        {
          const std::lock_guard lock(mutex_);
          heads_.push_back(buffer.substr(0, n));
        }
        buffer.erase(0, n);
        co_await asio::async_write(socket, asio::buffer(answer_), asio::use_awaitable);
      }
    } catch (const std::exception&) {
      // The client closed the connection.
    }
  }

  std::string answer_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<std::string> heads_;
};

// A few clients back to back for a short run, retrying `attempts` times 1 ms apart.
load_options quick_load(std::uint16_t port, std::uint32_t attempts) {
  load_options o;
  o.target.port = port;
  o.clients = 3;
  o.think_mean = 1ms;
  o.timeout = 1s;
  o.duration_total = 300ms;
  o.report_every = 10s;
  o.strategy.max_attempts = attempts;
  o.strategy.policy = backoff::backoff_policy::constant(1ms);
  o.grow_from_think = false;
  return o;
}

const std::string answer_503 = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";

std::string answer_503_with_pushback(std::string_view value) {
  return "HTTP/1.1 503 Service Unavailable\r\ngrpc-retry-pushback-ms: " + std::string(value) +
         "\r\nContent-Length: 0\r\n\r\n";
}

// --- the answer's pushback, as the parser reads it and the retry loop judges it ----------------

// The head an answer's bytes give, read twice: through the parser, then as a known answer.
backoff::net::load_detail::reply_head head_of(const std::string& bytes,
                                              backoff::net::load_detail::known_replies& known) {
  boost::beast::flat_buffer buffer;
  const auto put = [&] {
    const auto room = buffer.prepare(bytes.size());
    std::memcpy(room.data(), bytes.data(), bytes.size());
    buffer.commit(bytes.size());
  };
  put();
  backoff::net::load_detail::reply_head head;
  EXPECT_FALSE(backoff::net::load_detail::answer_reader().take(buffer, known, head));
  put();
  backoff::net::load_detail::reply_head again;
  EXPECT_FALSE(backoff::net::load_detail::answer_reader().take(buffer, known, again));
  EXPECT_EQ(again.grpc_retry_pushback, head.grpc_retry_pushback);
  EXPECT_EQ(buffer.size(), 0u);
  return head;
}

TEST(LoadPushback, TheParserKeepsTheFirstPushbackFieldInAnyCase) {
  backoff::net::load_detail::known_replies known;
  EXPECT_EQ(head_of(answer_503_with_pushback("-1"), known).grpc_retry_pushback, "-1");
  EXPECT_EQ(head_of("HTTP/1.1 503 Unavailable\r\nGRPC-Retry-Pushback-Ms: 250\r\n"
                    "grpc-retry-pushback-ms: -1\r\nContent-Length: 0\r\n\r\n",
                    known)
                .grpc_retry_pushback,
            "250");
  EXPECT_FALSE(head_of(answer_503, known).grpc_retry_pushback.has_value());
}

TEST(LoadPushback, ANegativeOrMalformedPushbackIsPermanentAndAWaitIsThePushbackItself) {
  reply r;
  r.kind = reply_kind::error;
  r.status = 503;
  r.do_not_retry = true;
  EXPECT_EQ(classify_reply(r).kind, verdict_kind::permanent);
  reply wait = r;
  wait.do_not_retry = false;
  wait.retry_after = 250ms;
  wait.pushback = true;
  const backoff::verdict v = classify_reply(wait);
  EXPECT_EQ(v.kind, verdict_kind::retryable);
  EXPECT_EQ(v.retry_after, duration{250ms});
  EXPECT_TRUE(v.pushback);
  // Without the header, as before: every error retried, Retry-After a minimum.
  reply plain = r;
  plain.do_not_retry = false;
  plain.retry_after = 2s;
  EXPECT_EQ(classify_reply(plain), backoff::verdict::retryable(2s));
}

// A 503 that says "do not retry": each operation ends, failed, after its first attempt.
TEST(LoadPushback, ANegativePushbackEndsTheOperationWithoutARetry) {
  for (const std::string_view value : {"-1", "soon"}) {
    scripted_server upstream(answer_503_with_pushback(value));
    const auto run = run_load(quick_load(upstream.port(), 5), {});
    EXPECT_GT(run.failed, 10u) << value;
    EXPECT_EQ(run.succeeded, 0u) << value;
    // One request per operation (those unfinished at the end may not have sent theirs yet).
    EXPECT_LE(run.requests, run.operations) << value;
    EXPECT_GE(run.requests, run.failed) << value;
    EXPECT_EQ(run.summary.gave_up, run.failed) << value;
    // Every request reached the server but those sent as the run ended.
    EXPECT_LE(upstream.heads().size(), run.requests) << value;
    EXPECT_GE(upstream.heads().size() + 3, run.requests) << value;
  }
}

// A pushback is the wait itself: each retry leaves at least 30 ms after its first attempt, not the
// policy's 1 ms, and says so in its x-backoff-since-first-attempt.
TEST(LoadPushback, APushbackIsTheWaitBeforeTheRetry) {
  scripted_server upstream(answer_503_with_pushback("30"));
  const auto run = run_load(quick_load(upstream.port(), 2), {});
  EXPECT_GT(run.failed, 3u);
  int retries = 0;
  for (const std::string& head : upstream.heads()) {
    const auto since = field_of(head, backoff::faults::since_first_attempt_header);
    if (!since) continue;
    ++retries;
    const std::optional<double> ms = milliseconds_of(*since);
    ASSERT_TRUE(ms.has_value()) << *since;
    EXPECT_GE(*ms, 30.0);
  }
  EXPECT_GE(retries, static_cast<int>(run.failed));
}

// --- what each attempt says --------------------------------------------------------------------

// The heads with and without a field.
struct heads_split {
  std::vector<std::string> with, without;
};
heads_split split_by(const std::vector<std::string>& heads, std::string_view field) {
  heads_split s;
  for (const std::string& h : heads) (field_of(h, field) ? s.with : s.without).push_back(h);
  return s;
}

TEST(LoadHeaders, OnlyAttemptsAfterTheFirstSayHowLongAgoTheFirstLeft) {
  scripted_server upstream(answer_503);
  const auto run = run_load(quick_load(upstream.port(), 3), {});
  ASSERT_GT(run.failed, 10u);
  const heads_split s = split_by(upstream.heads(), backoff::faults::since_first_attempt_header);
  // Three attempts an operation: the first without the field, the two retries with it.
  EXPECT_GE(s.without.size(), run.failed);
  EXPECT_LE(s.without.size(), run.operations);
  EXPECT_GE(s.with.size(), 2 * run.failed);
  EXPECT_LE(s.with.size(), 2 * run.operations);
  for (const std::string& head : s.with) {
    const std::optional<double> ms =
        milliseconds_of(*field_of(head, backoff::faults::since_first_attempt_header));
    ASSERT_TRUE(ms.has_value()) << head;
    EXPECT_GE(*ms, 1.0);  // at least the policy's 1 ms after the first attempt's answer
    EXPECT_LT(*ms, 1000.0);
  }
  // Without --send-key nothing else is added: a first attempt is the prepared request.
  for (const std::string& head : upstream.heads()) {
    EXPECT_FALSE(field_of(head, "x-backoff-key").has_value()) << head;
    EXPECT_FALSE(field_of(head, "grpc-timeout").has_value()) << head;
  }
}

TEST(LoadHeaders, WithSendKeyEveryAttemptSaysItsOperationsKey) {
  scripted_server upstream(answer_503);
  load_options o = quick_load(upstream.port(), 3);
  o.send_key = true;
  const auto run = run_load(o, {});
  ASSERT_GT(run.failed, 10u);
  // The keys of operations 0, 1, 2, ... as the system model mixes its operations' ids.
  std::set<std::string> possible;
  for (std::uint64_t i = 0; i < run.operations; ++i) {
    possible.insert(std::to_string(backoff::splitmix64(i)));
  }
  EXPECT_EQ(possible.count("16294208416658607535"), 1u);  // splitmix64(0)
  std::map<std::string, int> attempts_by_key;
  for (const std::string& head : upstream.heads()) {
    const std::optional<std::string> key = field_of(head, "x-backoff-key");
    ASSERT_TRUE(key.has_value()) << head;
    EXPECT_EQ(possible.count(*key), 1u) << *key;
    ++attempts_by_key[*key];
  }
  // One key an operation, on each of its attempts: every ended operation's three.
  EXPECT_GE(attempts_by_key.size(), run.failed);
  for (const auto& [key, n] : attempts_by_key) EXPECT_LE(n, 3) << key;
}

TEST(LoadHeaders, AHedgedCopyAfterTheFirstSaysHowLongAgoTheFirstLeft) {
  scripted_server upstream(answer_503);
  load_options o = quick_load(upstream.port(), 0);
  o.strategy.hedge = backoff::parse_hedge("hedge(max_attempts=2, delay=0s, non_fatal=[503])");
  const auto run = run_load(o, {});
  ASSERT_GT(run.failed, 10u);
  const heads_split s = split_by(upstream.heads(), backoff::faults::since_first_attempt_header);
  EXPECT_GE(s.without.size(), run.failed);
  EXPECT_GE(s.with.size(), run.failed);
  EXPECT_LE(s.with.size(), run.operations);
}

// With --propagate-deadline an attempt says its own time: the timeout, cut to what is left of the
// operation's deadline.
TEST(LoadHeaders, APropagatedTimeIsCutToTheOperationsDeadline) {
  for (const bool with_deadline : {false, true}) {
    scripted_server upstream(answer_503);
    load_options o = quick_load(upstream.port(), 3);
    o.strategy.policy = backoff::backoff_policy::constant(10ms);
    o.propagate_deadline = true;
    if (with_deadline) o.request_deadline = 25ms;
    const auto run = run_load(o, {});
    ASSERT_GT(run.failed, 5u);
    const auto heads = upstream.heads();
    bool cut = false;
    for (const std::string& head : heads) {
      const std::optional<std::string> grpc = field_of(head, "grpc-timeout");
      const std::optional<std::string> envoy = field_of(head, "x-envoy-expected-rq-timeout-ms");
      ASSERT_TRUE(grpc && envoy) << head;
      const std::optional<duration> t = backoff::parse_grpc_timeout(*grpc);
      const std::optional<duration> ms = backoff::parse_timeout_ms(*envoy);
      ASSERT_TRUE(t && ms) << head;
      if (with_deadline) {
        EXPECT_LE(*t, duration{25ms}) << head;
        EXPECT_LE(*ms, duration{25ms}) << head;
        // A retry leaves at least 10 ms into the operation: less than 15 ms left.
        if (field_of(head, backoff::faults::since_first_attempt_header)) cut |= *t < 15ms;
      } else {
        EXPECT_EQ(*t, duration{1s}) << head;
        EXPECT_EQ(*ms, duration{1s}) << head;
      }
    }
    EXPECT_EQ(cut, with_deadline);
  }
}

// --- against `backoff serve` ----------------------------------------------------------------

backoff::net::server_options serve_with_fault(std::string_view spec) {
  backoff::net::server_options so;
  so.port = 0;
  so.threads = 1;
  so.service.base_delay = 0ms;
  so.max_busy = 0;
  so.log_every_second = false;
  so.faults.faults.push_back({{}, backoff::faults::parse_fault(spec)});
  return so;
}

// Half the keys are down: with send_key exactly the operations whose key is among them fail (on
// every retry), about half; without it the outage spares every request.
TEST(LoadServe, APerKeyOutageFailsTheOperationsWhoseKeyIsDown) {
  for (const bool send_key : {false, true}) {
    backoff::net::server s(serve_with_fault("outage(keys=50%)"));
    s.start();
    load_options o = quick_load(s.port(), 3);
    o.send_key = send_key;
    const auto run = run_load(o, {});
    s.stop();
    s.wait();
    ASSERT_GT(run.operations, 40u);
    if (!send_key) {
      EXPECT_EQ(run.failed, 0u);
      EXPECT_EQ(run.errors, 0u);
      continue;
    }
    // Operation i is down when splitmix64(i) mod 1000 < 500; every ended one failed or succeeded
    // by its key, those unfinished at the end may be any.
    std::uint64_t down = 0;
    for (std::uint64_t i = 0; i < run.operations; ++i) down += backoff::splitmix64(i) % 1000 < 500;
    EXPECT_LE(run.failed, down);
    EXPECT_GE(run.failed + run.unfinished, down);
    EXPECT_GE(run.errors, 3 * run.failed);  // each failed on all three attempts
    EXPECT_LE(run.errors, 3 * (run.failed + run.unfinished));
    // About half (binomial, n > 40: within 5 standard deviations).
    const double n = static_cast<double>(run.operations);
    EXPECT_NEAR(static_cast<double>(down), n / 2, 5 * std::sqrt(n / 4));
  }
}

// Every request fails unless its caller says it has been trying for 20 ms: a retry 30 ms after
// the first attempt always succeeds, the first attempt (no header: no fade) always fails.
TEST(LoadServe, AFadingErrorFadesForTheRetriesThatSayHowLongTheyTried) {
  backoff::net::server s(serve_with_fault("errors(rate=100%, fade=20ms)"));
  s.start();
  load_options o = quick_load(s.port(), 2);
  o.strategy.policy = backoff::backoff_policy::constant(30ms);
  const auto run = run_load(o, {});
  s.stop();
  s.wait();
  EXPECT_GT(run.succeeded, 5u);
  EXPECT_EQ(run.failed, 0u);
  // Each success after exactly one error: its first attempt's.
  EXPECT_GE(run.errors, run.succeeded);
  EXPECT_LE(run.errors, run.succeeded + o.clients);
  EXPECT_EQ(run.ok, run.succeeded);
}

}  // namespace load_headers_tests
