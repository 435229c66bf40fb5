// SPDX-License-Identifier: Apache-2.0
// `backoff load`'s client as a library: which failures are this machine's rather than the
// server's (out of descriptors, buffers or local ports). The end-to-end case, under a low
// `ulimit -n`, is in tests/cli/net_cli_test.cpp.
#include "net/client/load.hpp"

#include <gtest/gtest.h>

#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <cerrno>
#include <chrono>
#include <thread>

namespace {

using backoff::net::is_local_error;

boost::system::error_code system_error(int e) {
  return {e, boost::system::system_category()};
}

TEST(Load, OutOfDescriptorsBuffersOrPortsIsALocalError) {
  for (const int e : {EMFILE, ENFILE, ENOBUFS, ENOMEM, EADDRNOTAVAIL}) {
    EXPECT_TRUE(is_local_error(system_error(e))) << e;
  }
}

TEST(Load, RefusalsResetsAndTimeoutsAreTheServers) {
  for (const int e : {ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT, EHOSTUNREACH}) {
    EXPECT_FALSE(is_local_error(system_error(e))) << e;
  }
  EXPECT_FALSE(is_local_error(boost::asio::error::eof));
  EXPECT_FALSE(is_local_error(boost::beast::error::timeout));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// --propagate-deadline: each attempt carries its time, and the server drops what expired.

#include "net/server/server.hpp"

namespace {

TEST(Load, PropagatedDeadlinesLetTheServerDropWorkItsClientGaveUpOn) {
  using namespace std::chrono_literals;
  for (const bool propagate : {false, true}) {
    backoff::net::server_options so;
    so.port = 0;
    so.threads = 1;
    so.service.base_delay = 1s;  // every attempt times out at 100 ms
    so.service.tick = 5ms;
    backoff::net::server s(so);
    s.start();
    backoff::net::load_options o;
    o.target.port = s.port();
    o.clients = 4;
    o.think_mean = 1ms;
    o.timeout = 100ms;
    o.duration_total = 600ms;
    o.report_every = 10s;
    o.strategy.max_attempts = 2;
    o.strategy.policy = backoff::backoff_policy::constant(10ms);
    o.propagate_deadline = propagate;
    const auto run = backoff::net::run_load(o, {});
    EXPECT_GT(run.timeouts, 0u);
    EXPECT_EQ(run.ok, 0u);
    // Without the headers the server cannot know; with them it stops each request at its
    // deadline (the client's timeout), so it ends with fewer in service.
    EXPECT_TRUE([&] {
      for (int i = 0; i < 500; ++i) {
        const auto m = s.metrics().snapshot();
        if ((m.expired_in_service > 0) == propagate) return true;
        std::this_thread::sleep_for(2ms);
      }
      return false;
    }()) << "propagate="
         << propagate;
    s.stop();
    s.wait();
  }
}

}  // namespace

namespace {

// --breaker: one breaker for all clients; once open, attempts end without reaching the server.
TEST(Load, AnOpenBreakerKeepsAttemptsFromTheServer) {
  using namespace std::chrono_literals;
  backoff::net::server_options so;
  so.port = 0;
  so.threads = 1;
  so.service.base_delay = 0ms;
  so.max_busy = 0;
  backoff::net::server s(so);
  s.start();
  backoff::net::load_options o;
  o.target.port = s.port();
  o.target.path = "/nowhere";  // 404: every attempt fails
  o.clients = 4;
  o.think_mean = 5ms;
  o.timeout = 1s;
  o.duration_total = 400ms;
  o.report_every = 10s;
  o.strategy.max_attempts = 1;
  o.strategy.breaker = backoff::parse_breaker("breaker(kind=consecutive, failures=3, open=1h)");
  const auto run = backoff::net::run_load(o, {});
  // Three failures open it (a few more may be in flight then); nothing after.
  EXPECT_GE(run.requests, 3u);
  EXPECT_LE(run.requests, 3u + o.clients);
  EXPECT_EQ(s.metrics().snapshot().not_found, run.requests);
  EXPECT_GT(run.summary.operations, run.requests * 5);  // the refused ones, ended locally
  s.stop();
  s.wait();
}

}  // namespace

namespace {

// --hedge: copies go out every `delay` without an answer; the first answer wins and the losers
// are cancelled (their connections closed), counted neither as errors nor as timeouts.
TEST(Load, HedgedCopiesAreSentAndTheLosersCancelled) {
  using namespace std::chrono_literals;
  backoff::net::server_options so;
  so.port = 0;
  so.threads = 1;
  so.service.base_delay = 200ms;
  so.service.tick = 5ms;
  backoff::net::server s(so);
  s.start();
  backoff::net::load_options o;
  o.target.port = s.port();
  o.clients = 2;
  o.think_mean = 1ms;
  o.timeout = 5s;
  o.duration_total = 1s;
  o.report_every = 10s;
  o.strategy.hedge = backoff::parse_hedge("hedge(max_attempts=3, delay=50ms)");
  const auto run = backoff::net::run_load(o, {});
  ASSERT_GT(run.ok, 0u);
  EXPECT_EQ(run.errors, 0u);
  EXPECT_EQ(run.timeouts, 0u);
  // Each operation: a copy at 0, 50 and 100 ms, the first answered at about 200 ms.
  EXPECT_GE(run.requests, 3 * run.summary.completed);
  EXPECT_LE(run.requests, 3 * run.summary.operations);
  EXPECT_LE(run.ok, run.summary.operations);  // one winner per operation
  EXPECT_GE(run.summary.attempts_per_operation, 2.5);
  s.stop();
  s.wait();
}

}  // namespace

namespace {

// --throttle: one adaptive throttle (SRE book) for all clients; with every answer a failure it
// refuses most attempts locally, and a refused attempt ends its operation.
TEST(Load, AnAdaptiveThrottleRefusesAttemptsLocallyWhenTheServerFails) {
  using namespace std::chrono_literals;
  backoff::net::server_options so;
  so.port = 0;
  so.threads = 1;
  so.service.base_delay = 0ms;
  backoff::net::server s(so);
  s.start();
  backoff::net::load_options o;
  o.target.port = s.port();
  o.target.path = "/nowhere";  // 404: every attempt fails
  o.rate_per_s = 500;
  o.duration_total = 400ms;
  o.report_every = 10s;
  o.strategy.max_attempts = 1;
  o.strategy.throttle = backoff::parse_throttle("sre(k=2, window=2m)");
  const auto run = backoff::net::run_load(o, {});
  EXPECT_GT(run.summary.operations, 150u);
  EXPECT_GT(run.requests, 0u);
  EXPECT_LT(run.requests * 3, run.summary.operations);  // most refused before the server
  EXPECT_EQ(s.metrics().snapshot().not_found, run.requests);
  s.stop();
  s.wait();
}

}  // namespace
