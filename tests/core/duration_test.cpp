// SPDX-License-Identifier: Apache-2.0
// parse_duration / format_duration (duration.hpp): the accepted forms, exactness, round trips,
// and one clear error per kind of bad input.
#include "backoff/duration.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "backoff/error.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::format_duration;
using backoff::parse_duration;

TEST(ParseDuration, ReadsEachUnit) {
  EXPECT_EQ(parse_duration("750ns"), 750ns);
  EXPECT_EQ(parse_duration("500us"), 500us);
  EXPECT_EQ(parse_duration("500\xC2\xB5s"), 500us);  // µs (U+00B5, micro sign)
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("3s"), 3s);
  EXPECT_EQ(parse_duration("7m"), 7min);
  EXPECT_EQ(parse_duration("2h"), 2h);
  EXPECT_EQ(parse_duration("1d"), 24h);
}

TEST(ParseDuration, ReadsCompoundGroups) {
  EXPECT_EQ(parse_duration("1h30m"), 90min);
  EXPECT_EQ(parse_duration("2d3h"), 51h);
  EXPECT_EQ(parse_duration("1m30s"), 90s);
  EXPECT_EQ(parse_duration("1s500ms"), 1500ms);
  EXPECT_EQ(parse_duration("1h2m3s4ms5us6ns"), 1h + 2min + 3s + 4ms + 5us + 6ns);
}

TEST(ParseDuration, ZeroNeedsNoUnit) {
  EXPECT_EQ(parse_duration("0"), 0ns);
  EXPECT_EQ(parse_duration("0s"), 0ns);
  EXPECT_EQ(parse_duration("0ms"), 0ns);
}

TEST(ParseDuration, FractionsAreExactToTheNanosecond) {
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  // 1.1 has no exact binary representation; the parser must not go through double.
  EXPECT_EQ(parse_duration("1.1s").count(), 1'100'000'000);
  EXPECT_EQ(parse_duration("0.3s").count(), 300'000'000);
  EXPECT_EQ(parse_duration("12.5us"), 12500ns);
  EXPECT_EQ(parse_duration("271.828ms").count(), 271'828'000);
  EXPECT_EQ(parse_duration("1.000000001s").count(), 1'000'000'001);
  EXPECT_EQ(parse_duration("0.5h"), 30min);
  EXPECT_EQ(parse_duration("1.25d"), 30h);
}

TEST(ParseDuration, BlanksAroundTheTextAreIgnored) {
  EXPECT_EQ(parse_duration("  250ms "), 250ms);
  EXPECT_EQ(parse_duration("\t1s\t"), 1s);
}

TEST(ParseDuration, AcceptsValuesUpToTheInt64Limit) {
  // 106751 days 23:47:16.854775807 is exactly INT64_MAX nanoseconds.
  EXPECT_EQ(parse_duration("106751d23h47m16.854775807s"), duration::max());
  EXPECT_EQ(parse_duration("9223372036854775807ns"), duration::max());
}

// Each bad input must throw parse_error whose message quotes the input and names the problem.
struct bad_duration {
  std::string_view text;
  std::string_view fragment;
};

class ParseDurationRejects : public ::testing::TestWithParam<bad_duration> {};

TEST_P(ParseDurationRejects, WithAMessageNamingTheBadPart) {
  const bad_duration& c = GetParam();
  try {
    const duration d = parse_duration(c.text);
    FAIL() << "\"" << c.text << "\" parsed as " << d.count() << "ns";
  } catch (const backoff::parse_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(c.fragment), std::string::npos)
        << "message: " << message << "\nexpected to contain: " << c.fragment;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(BadInputs, ParseDurationRejects,
                         ::testing::Values(bad_duration{"", "empty"},                        //
                                           bad_duration{"   ", "empty"},                     //
                                           bad_duration{"5x", "unknown unit \"x\""},         //
                                           bad_duration{"3sec", "unknown unit \"sec\""},     //
                                           bad_duration{"1y", "unknown unit \"y\""},         //
                                           bad_duration{"1e3s", "unknown unit \"e\""},       //
                                           bad_duration{"5 s", "unknown unit \" s\""},       //
                                           bad_duration{"5", "missing unit"},                //
                                           bad_duration{"1s5", "missing unit after \"5\""},  //
                                           bad_duration{"1.5", "missing unit"},              //
                                           bad_duration{"-5s", "negative"},                  //
                                           bad_duration{"-0", "negative"},                   //
                                           bad_duration{"300000d", "too large"},             //
                                           bad_duration{"99999999999999999999s", "too large"},
                                           bad_duration{"106751d23h47m16.854775808s", "too large"},
                                           bad_duration{"1..5s", "'.' must be followed by digits"},
                                           bad_duration{"1.s", "'.' must be followed by digits"},
                                           bad_duration{"s", "expected a number at position 1"},
                                           bad_duration{"+1s", "expected a number at position 1"},
                                           bad_duration{"ms250", "expected a number"}));

TEST(ParseDuration, ErrorQuotesTheWholeInput) {
  try {
    (void)parse_duration("1h3x");
    FAIL() << "no exception";
  } catch (const backoff::parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"1h3x\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("position 4"), std::string::npos) << e.what();
  }
}

// error.hpp: a parse_error's message is one line. A duration read from a file or an environment
// variable may carry a line break; quoting it verbatim would split the message.
TEST(ParseDuration, ErrorStaysOneLineWhenTheTextContainsALineBreak) {
  // Trimming a trailing line break would be fine too; what must not happen is a two-line error.
  for (std::string_view text : {"1s\n", "1s\r\n", "5\nms", "1x\n"}) {
    try {
      EXPECT_EQ(parse_duration(text), 1s) << "accepted, so it must mean 1s";
    } catch (const backoff::parse_error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      EXPECT_EQ(message.find('\r'), std::string::npos) << message;
    }
  }
}

TEST(FormatDuration, PicksTheShortestExactForm) {
  EXPECT_EQ(format_duration(0ns), "0s");
  EXPECT_EQ(format_duration(750ns), "750ns");
  EXPECT_EQ(format_duration(12500ns), "12.5us");
  EXPECT_EQ(format_duration(500us), "500us");
  EXPECT_EQ(format_duration(250ms), "250ms");
  EXPECT_EQ(format_duration(1500ms), "1.5s");
  EXPECT_EQ(format_duration(1100ms), "1.1s");
  EXPECT_EQ(format_duration(90min), "1h30m");
  EXPECT_EQ(format_duration(51h), "2d3h");
  EXPECT_EQ(format_duration(90s), "1m30s");
  EXPECT_EQ(format_duration(61500ms), "1m1.5s");
  EXPECT_EQ(format_duration(duration{271'828'000}), "271.828ms");
}

TEST(FormatDuration, NeverDropsANanosecond) {
  EXPECT_EQ(format_duration(1s + 1ns), "1.000000001s");
  EXPECT_EQ(format_duration(1ms + 1ns), "1.000001ms");
  EXPECT_EQ(format_duration(24h + 1ns), "1d0.000000001s");
}

TEST(FormatDuration, WritesNegativeValuesWithASign) {
  EXPECT_EQ(format_duration(-1500ms), "-1.5s");
  EXPECT_EQ(format_duration(-750ns), "-750ns");
}

TEST(DurationRoundTrip, ParseOfFormatGivesBackTheValue) {
  const duration samples[] = {0ns,
                              1ns,
                              999ns,
                              1us,
                              12500ns,
                              999'999ns,
                              250ms,
                              1100ms,
                              59'999'999'999ns,
                              1min,
                              90min,
                              51h,
                              24h + 1ns,
                              duration{123'456'789'012'345},
                              duration::max()};
  for (const duration d : samples) {
    const std::string text = format_duration(d);
    EXPECT_EQ(parse_duration(text), d) << text;
  }
}

TEST(DurationRoundTrip, FormatOfParseIsCanonical) {
  for (std::string_view text : {"250ms", "1h30m", "1.5s", "2d3h", "500us", "750ns", "1m30s"}) {
    EXPECT_EQ(format_duration(parse_duration(text)), text);
  }
  EXPECT_EQ(format_duration(parse_duration("90s")), "1m30s");
  EXPECT_EQ(format_duration(parse_duration("0")), "0s");
}

TEST(ToSeconds, ConvertsToADouble) {
  EXPECT_DOUBLE_EQ(backoff::to_seconds(1500ms), 1.5);
  EXPECT_DOUBLE_EQ(backoff::to_seconds(0ns), 0.0);
}

}  // namespace
