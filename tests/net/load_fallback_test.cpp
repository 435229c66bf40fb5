// SPDX-License-Identifier: Apache-2.0
// `backoff load --fallback`: the failed operations whose outcome the fallback answers for are
// counted apart (fell_back_rate, answered_rate), and nothing the clients send changes.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "backoff/fallback.hpp"
#include "net/client/load.hpp"
#include "net/server/server.hpp"
#include "report/recorder.hpp"

namespace {

std::optional<double> load_fallback_field(const backoff::report::strategy_summary& s,
                                          std::string_view name) {
  for (const auto& f : s.fields) {
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

// Every attempt that reaches the server gets a 404 (a permanent failure); once three in a row
// have opened the breaker, the others end locally as breaker_open, and only those fall back.
TEST(LoadFallback, CountsTheOperationsItAnswersForAndNoOthers) {
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
  o.target.path = "/nowhere";
  o.clients = 4;
  o.think_mean = 5ms;
  o.timeout = 1s;
  o.duration_total = 400ms;
  o.report_every = 10s;
  o.strategy.max_attempts = 1;
  o.strategy.breaker = backoff::parse_breaker("breaker(kind=consecutive, failures=3, open=1h)");
  o.strategy.fallback = backoff::parse_fallback("fallback(on=[breaker_open])");
  const auto run = backoff::net::run_load(o, {});
  s.stop();
  s.wait();
  const auto& sum = run.summary;
  const std::optional<double> rate =
      load_fallback_field(sum, backoff::report::fell_back_rate_field);
  ASSERT_TRUE(rate.has_value());
  const auto fell_back =
      static_cast<std::uint64_t>(std::llround(*rate * static_cast<double>(sum.operations)));
  EXPECT_EQ(sum.completed, 0u);
  EXPECT_GT(fell_back, 0u);
  // The failures that reached the server (a 404 each, at most `clients` of them still in flight
  // at the end) are not the fallback's.
  ASSERT_GE(sum.gave_up, fell_back);
  EXPECT_LE(sum.gave_up - fell_back, run.requests);
  EXPECT_GE(sum.gave_up - fell_back + o.clients, run.requests);
  EXPECT_EQ(load_fallback_field(sum, backoff::report::answered_rate_field), *rate);
}

}  // namespace
