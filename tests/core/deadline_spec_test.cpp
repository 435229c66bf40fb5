// SPDX-License-Identifier: Apache-2.0
// The deadline spec (deadline.hpp): reading, canonical text, checks, and what it sets in a loop's
// options, down to the attempt timeouts the sync loop hands its operation.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "backoff/deadline.hpp"
#include "backoff/error.hpp"
#include "backoff/retry.hpp"

using namespace std::chrono_literals;

namespace {

std::string deadline_error(std::string_view text) {
  try {
    (void)backoff::parse_deadline(text);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(DeadlineSpec, ReadsEveryKeyAndWritesCanonicalText) {
  const auto d = backoff::parse_deadline(
      "deadline(per_attempt=1s, min_useful=10ms, propagate=true, total=10s)");
  EXPECT_EQ(d.total, 10s);
  EXPECT_EQ(d.per_attempt, 1s);
  EXPECT_EQ(d.min_useful, 10ms);
  EXPECT_TRUE(d.propagate);
  EXPECT_EQ(d.to_string(), "deadline(total=10s, per_attempt=1s, min_useful=10ms, propagate=true)");
  EXPECT_EQ(backoff::parse_deadline(d.to_string()), d);
  EXPECT_EQ(backoff::parse_deadline("deadline").to_string(), "deadline()");
  // SPEC 7.2's example: min_useful applies to the loop's own deadline when there is no total.
  const auto spec =
      backoff::parse_deadline("deadline(per_attempt=1s, min_useful=10ms, propagate=true)");
  EXPECT_EQ(spec.total, 0s);
  EXPECT_EQ(spec.min_useful, 10ms);
  backoff::retry_options keep{
      .policy = {.backoff = backoff::backoff_policy::constant(1s), .max_elapsed = 5s}};
  spec.apply(keep);
  EXPECT_EQ(keep.policy.max_elapsed, 5s);
  EXPECT_EQ(keep.min_attempt_time, 10ms);
  EXPECT_EQ(backoff::parse_deadline("deadline(per_attempt=250ms)").to_string(),
            "deadline(per_attempt=250ms)");
}

TEST(DeadlineSpec, RefusesBadSpecsWithOneLine) {
  EXPECT_EQ(deadline_error("timeout(total=1s)"),
            "bad deadline \"timeout(total=1s)\": unknown deadline \"timeout\" (write "
            "deadline(per_attempt=1s, ...))");
  EXPECT_EQ(deadline_error("deadline(per_try=1s)"),
            "bad deadline \"deadline(per_try=1s)\": unknown parameter \"per_try\" (known: total, "
            "per_attempt, min_useful, propagate)");
  EXPECT_EQ(deadline_error("deadline(total=1s, min_useful=2s)"),
            "bad deadline \"deadline(total=1s, min_useful=2s)\": min_useful=2s is above total=1s: "
            "no attempt could start");
  EXPECT_EQ(deadline_error("deadline(propagate=yes)"),
            "bad deadline \"deadline(propagate=yes)\": propagate=yes must be true or false");
  EXPECT_NE(deadline_error("deadline(total=soon)")
                .find("bad deadline \"deadline(total=soon)\": "
                      "total: "),
            std::string::npos);
}

TEST(DeadlineSpec, ApplySetsTheLoopsTimeoutsAndTheAttemptsSeeThem) {
  backoff::retry_options options{
      .policy = {.backoff = backoff::backoff_policy::constant(300ms), .max_attempts = 0}};
  backoff::parse_deadline("deadline(total=1s, per_attempt=400ms, min_useful=100ms)").apply(options);
  EXPECT_EQ(options.policy.max_elapsed, 1s);
  EXPECT_EQ(options.attempt_timeout, 400ms);
  EXPECT_EQ(options.min_attempt_time, 100ms);

  backoff::duration clock{0};
  backoff::retry_env env;
  env.now = [&] { return clock; };
  env.sleep = [&](backoff::duration d, std::stop_token) {
    clock += d;
    return true;
  };
  std::vector<backoff::duration> timeouts;
  const auto result = backoff::retry(
      [&](const backoff::attempt_context& c) {
        timeouts.push_back(c.timeout);
        clock += 50ms;
        return false;
      },
      options, env);
  // Attempts start at 0, 350, 700 ms (300 ms waits after 50 ms attempts): 400, 400, 300 ms left
  // for each. After the third, 250 ms are left, and a 300 ms wait would leave none of the
  // 100 ms minimum: the loop ends instead of waiting.
  EXPECT_EQ(timeouts, (std::vector<backoff::duration>{400ms, 400ms, 300ms}));
  EXPECT_EQ(result.why, backoff::outcome::deadline_exceeded);
}

}  // namespace
