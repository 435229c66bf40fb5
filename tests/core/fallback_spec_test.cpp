// SPDX-License-Identifier: Apache-2.0
// The fallback as strategy text: `fallback()` answers for every failure but a cancellation,
// `fallback(on=[...])` for exactly the outcomes named; the canonical text reads back equal, and
// bad text is one line that names the outcome.
#include <gtest/gtest.h>

#include <string>

#include "backoff/fallback.hpp"
#include "backoff/strategy.hpp"

namespace {

std::string fallback_spec_error(const std::string& text) {
  try {
    (void)backoff::parse_fallback(text);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(FallbackSpec, TheDefaultAnswersForEveryFailureButACancellation) {
  const backoff::fallback_config f = backoff::parse_fallback("fallback()");
  EXPECT_FALSE(f.on.contains(backoff::outcome::succeeded));
  EXPECT_FALSE(f.on.contains(backoff::outcome::cancelled));
  for (const auto o : {backoff::outcome::attempts_exhausted, backoff::outcome::deadline_exceeded,
                       backoff::outcome::permanent, backoff::outcome::budget_exhausted,
                       backoff::outcome::throttled, backoff::outcome::breaker_open,
                       backoff::outcome::not_idempotent, backoff::outcome::limited}) {
    EXPECT_TRUE(f.on.contains(o)) << backoff::to_string(o);
  }
  EXPECT_EQ(f.to_string(), "fallback()");
  EXPECT_EQ(f, backoff::fallback_config{});
}

TEST(FallbackSpec, OnNamesExactlyTheOutcomesItAnswersFor) {
  const backoff::fallback_config f =
      backoff::parse_fallback("fallback(on=[limited, breaker_open])");
  EXPECT_TRUE(f.on.contains(backoff::outcome::breaker_open));
  EXPECT_TRUE(f.on.contains(backoff::outcome::limited));
  EXPECT_FALSE(f.on.contains(backoff::outcome::attempts_exhausted));
  EXPECT_FALSE(f.on.contains(backoff::outcome::permanent));
  // Canonical: in the outcomes' order, whatever order they were written in.
  EXPECT_EQ(f.to_string(), "fallback(on=[breaker_open, limited])");
  EXPECT_EQ(backoff::parse_fallback(f.to_string()), f);
  // One outcome may stand without brackets; a cancellation may be asked for by name.
  const backoff::fallback_config one = backoff::parse_fallback("fallback(on=cancelled)");
  EXPECT_TRUE(one.on.contains(backoff::outcome::cancelled));
  EXPECT_FALSE(one.on.contains(backoff::outcome::breaker_open));
  EXPECT_EQ(one.to_string(), "fallback(on=[cancelled])");
}

TEST(FallbackSpec, BadTextIsOneLineNamingWhatIsWrong) {
  EXPECT_EQ(fallback_spec_error("fallback(on=[breaker_opn])"),
            "bad fallback \"fallback(on=[breaker_opn])\": on: unknown outcome \"breaker_opn\" "
            "(known: attempts_exhausted, deadline_exceeded, permanent, cancelled, "
            "budget_exhausted, throttled, breaker_open, not_idempotent, limited); did you mean "
            "'breaker_open'?");
  EXPECT_NE(fallback_spec_error("fallback(on=[succeeded])").find("unknown outcome \"succeeded\""),
            std::string::npos);
  EXPECT_NE(fallback_spec_error("fallback(on=[])").find("answers for nothing"), std::string::npos);
  EXPECT_NE(fallback_spec_error("fallbak()").find("unknown fallback \"fallbak\""),
            std::string::npos);
  EXPECT_NE(fallback_spec_error("fallback(of=[limited])").find("unknown parameter \"of\""),
            std::string::npos);
  for (const char* bad : {"fallback(on=[breaker_opn])", "fallback(on=[])", "fallbak()"}) {
    EXPECT_EQ(fallback_spec_error(bad).find('\n'), std::string::npos) << bad;
  }
}

TEST(FallbackSpec, IsAStrategyKeyThatRoundTrips) {
  const backoff::strategy s = backoff::parse_strategy(
      "policy=exponential(initial=10ms), max_attempts=3, fallback=fallback(on=[breaker_open])");
  ASSERT_TRUE(s.fallback.has_value());
  EXPECT_TRUE(s.fallback->on.contains(backoff::outcome::breaker_open));
  EXPECT_TRUE(s.has("fallback"));
  EXPECT_EQ(backoff::parse_strategy(s.to_string()), s);
  EXPECT_NE(s.to_string().find("fallback=fallback(on=[breaker_open])"), std::string::npos)
      << s.to_string();
  // The library user builds the typed fallback from the strategy's outcomes.
  const backoff::fallback<int> cached{7, s.fallback->on};
  EXPECT_TRUE(cached.handles(backoff::outcome::breaker_open));
  EXPECT_FALSE(cached.handles(backoff::outcome::attempts_exhausted));
  // A fallback changes nothing the controller sees.
  const backoff::strategy without =
      backoff::parse_strategy("policy=exponential(initial=10ms), max_attempts=3");
  EXPECT_EQ(s.retry().backoff, without.retry().backoff);
  EXPECT_EQ(s.retry().max_attempts, without.retry().max_attempts);
  EXPECT_FALSE(without.has("fallback"));
}

}  // namespace
