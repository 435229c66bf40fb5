// SPDX-License-Identifier: Apache-2.0
// The deadline and attempt headers (deadline_headers.hpp): grpc-timeout's grammar and rounding,
// Envoy's millisecond timeout and attempt count, and what a server reads from both.
#include "backoff/deadline_headers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <string_view>

namespace {

using namespace std::chrono_literals;
using backoff::duration;

TEST(GrpcTimeout, IsWrittenInTheFinestUnitThatFitsEightDigits) {
  EXPECT_EQ(backoff::format_grpc_timeout(1ns), "1n");
  EXPECT_EQ(backoff::format_grpc_timeout(99'999'999ns), "99999999n");
  EXPECT_EQ(backoff::format_grpc_timeout(100ms), "100000u");
  EXPECT_EQ(backoff::format_grpc_timeout(250ms), "250000u");
  EXPECT_EQ(backoff::format_grpc_timeout(100'000'000'000ns), "100000m");  // 100 s
  EXPECT_EQ(backoff::format_grpc_timeout(48h), "172800S");
  EXPECT_EQ(backoff::format_grpc_timeout(duration::max()), "2562048H");
}

TEST(GrpcTimeout, RoundsUpAndWritesAPastDeadlineAsZero) {
  EXPECT_EQ(backoff::format_grpc_timeout(100'000'001ns), "100001u");
  EXPECT_EQ(backoff::format_grpc_timeout(0ns), "0n");
  EXPECT_EQ(backoff::format_grpc_timeout(-5s), "0n");
}

TEST(GrpcTimeout, ParsesEveryUnit) {
  EXPECT_EQ(backoff::parse_grpc_timeout("100m"), duration{100ms});
  EXPECT_EQ(backoff::parse_grpc_timeout("7n"), duration{7ns});
  EXPECT_EQ(backoff::parse_grpc_timeout("15u"), duration{15us});
  EXPECT_EQ(backoff::parse_grpc_timeout("30S"), duration{30s});
  EXPECT_EQ(backoff::parse_grpc_timeout("2M"), duration{2min});
  EXPECT_EQ(backoff::parse_grpc_timeout("1H"), duration{1h});
  EXPECT_EQ(backoff::parse_grpc_timeout("0n"), duration{0});
  EXPECT_EQ(backoff::parse_grpc_timeout("00000001S"), duration{1s});
  EXPECT_EQ(backoff::parse_grpc_timeout("99999999H"), duration::max()) << "saturates";
}

TEST(GrpcTimeout, RefusesAnythingOutsideTheGrammar) {
  for (const std::string_view bad : {"", "m", "100", "100x", "-1m", "+1m", " 1m", "1m ", "1 m",
                                     "123456789n", "1.5S", "1s", "1h", "0x10m", "１m"}) {
    EXPECT_FALSE(backoff::parse_grpc_timeout(bad)) << "'" << bad << "'";
  }
}

TEST(GrpcTimeout, RoundTripsToAtLeastTheTimeAndLessThanOneUnitMore) {
  for (const duration d :
       {duration{1}, duration{999}, duration{123'456'789}, duration{1s}, duration{1s + 1ns},
        duration{37min + 12s + 5ms}, duration{90h}, duration{1'234'567'890'123'456}}) {
    const auto back = backoff::parse_grpc_timeout(backoff::format_grpc_timeout(d));
    ASSERT_TRUE(back) << d.count();
    EXPECT_GE(*back, d);
    // The unit chosen is at most 1000 times one whose 8 digits did not hold d, so it is below
    // d / 99,999 (+1 ns for the finest), and the rounding is less than one unit.
    EXPECT_LT(*back - d, d / 99'999 + 1ns) << d.count();
  }
}

TEST(EnvoyTimeoutMs, WholeMillisecondsRoundedUp) {
  EXPECT_EQ(backoff::format_timeout_ms(250ms), "250");
  EXPECT_EQ(backoff::format_timeout_ms(1ns), "1");
  EXPECT_EQ(backoff::format_timeout_ms(1'000'001ns), "2");
  EXPECT_EQ(backoff::format_timeout_ms(-1s), "0");
  EXPECT_EQ(backoff::parse_timeout_ms("250"), duration{250ms});
  EXPECT_EQ(backoff::parse_timeout_ms("0"), duration{0});
  EXPECT_EQ(backoff::parse_timeout_ms("9999999999999999999"), duration::max());
  for (const std::string_view bad : {"", "-1", "1.5", "abc", "1ms", " 1", "99999999999999999999"}) {
    EXPECT_FALSE(backoff::parse_timeout_ms(bad)) << "'" << bad << "'";
  }
}

TEST(AttemptHeaders, CountFromOneAndPreviousFromZero) {
  EXPECT_EQ(backoff::parse_attempt_count("1"), 1u);
  EXPECT_EQ(backoff::parse_attempt_count("4294967295"), 4294967295u);
  EXPECT_FALSE(backoff::parse_attempt_count("0"));
  EXPECT_FALSE(backoff::parse_attempt_count("4294967296"));
  EXPECT_FALSE(backoff::parse_attempt_count("-1"));
  EXPECT_FALSE(backoff::parse_attempt_count(""));
  EXPECT_EQ(backoff::parse_previous_attempts("0"), 0u);
  EXPECT_EQ(backoff::parse_previous_attempts("3"), 3u);
  EXPECT_FALSE(backoff::parse_previous_attempts("3 "));
}

struct header_map {
  std::map<std::string, std::string, std::less<>> fields;
  std::string_view operator()(std::string_view name) const {
    const auto it = fields.find(name);
    return it == fields.end() ? std::string_view() : std::string_view(it->second);
  }
};

TEST(ReadDeadlineHeaders, TakesTheTighterTimeoutAndTheAttempt) {
  const auto both =
      backoff::read_deadline_headers(header_map{{{"grpc-timeout", "2S"},
                                                 {"x-envoy-expected-rq-timeout-ms", "1500"},
                                                 {"x-envoy-attempt-count", "3"}}});
  EXPECT_EQ(both.timeout, duration{1500ms});
  EXPECT_EQ(both.attempt, 3u);

  const auto grpc_only = backoff::read_deadline_headers(
      header_map{{{"grpc-timeout", "100m"}, {"grpc-previous-rpc-attempts", "2"}}});
  EXPECT_EQ(grpc_only.timeout, duration{100ms});
  EXPECT_EQ(grpc_only.attempt, 3u);

  const auto malformed =
      backoff::read_deadline_headers(header_map{{{"grpc-timeout", "soon"},
                                                 {"x-envoy-expected-rq-timeout-ms", "20"},
                                                 {"x-envoy-attempt-count", "0"},
                                                 {"grpc-previous-rpc-attempts", "x"}}});
  EXPECT_EQ(malformed.timeout, duration{20ms}) << "a malformed header contributes nothing";
  EXPECT_FALSE(malformed.attempt);

  const auto none = backoff::read_deadline_headers(header_map{});
  EXPECT_FALSE(none.timeout);
  EXPECT_FALSE(none.attempt);
}

}  // namespace
