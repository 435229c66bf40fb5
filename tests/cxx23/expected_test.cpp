// SPDX-License-Identifier: Apache-2.0
// std::expected (C++23) through the library's C++20 headers: the default classifier takes any
// expected-like result, with no code written for std::expected in particular. Built with
// -std=c++23 only where the standard library has <expected> (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <expected>
#include <string>
#include <system_error>
#include <vector>

#include "backoff/classify.hpp"
#include "backoff/retry.hpp"
#include "recording_env.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::outcome;
using backoff::verdict_kind;

TEST(StdExpected, IsClassifiedByTheDefaultClassifier) {
  const backoff::default_classifier c;
  EXPECT_EQ(c(std::expected<int, std::string>(4)).kind, verdict_kind::success);
  EXPECT_EQ(c(std::expected<int, std::string>(std::unexpected("no"))).kind,
            verdict_kind::retryable);
  EXPECT_EQ(c(std::expected<void, std::error_code>()).kind, verdict_kind::success);
  EXPECT_EQ(c(std::expected<void, std::error_code>(
                  std::unexpected(make_error_code(std::errc::connection_reset))))
                .kind,
            verdict_kind::retryable);
  EXPECT_EQ(c(std::expected<void, std::error_code>(
                  std::unexpected(make_error_code(std::errc::permission_denied))))
                .kind,
            verdict_kind::permanent);
}

TEST(StdExpected, DrivesTheRetryLoop) {
  backoff::testing::recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&]() -> std::expected<int, std::error_code> {
        if (++calls < 3) return std::unexpected(make_error_code(std::errc::timed_out));
        return 42;
      },
      backoff::retry_options{
          .policy = {.backoff = backoff::backoff_policy::constant(1s), .max_attempts = 5}},
      rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  ASSERT_TRUE(r.last);
  EXPECT_EQ(r.last->value(), 42);
  EXPECT_EQ(rec.sleeps, (std::vector<backoff::duration>{1s, 1s}));
}

TEST(StdExpected, APermanentErrorStopsTheLoop) {
  backoff::testing::recording_env rec;
  const auto r = backoff::retry(
      []() -> std::expected<int, std::error_code> {
        return std::unexpected(make_error_code(std::errc::invalid_argument));
      },
      backoff::retry_options{
          .policy = {.backoff = backoff::backoff_policy::constant(1s), .max_attempts = 5}},
      rec.env);
  EXPECT_EQ(r.why, outcome::permanent);
  EXPECT_EQ(r.attempts, 1u);
}

}  // namespace
