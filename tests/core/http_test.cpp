// SPDX-License-Identifier: Apache-2.0
// HTTP conventions (http.hpp): status classification and Retry-After, in its delay-seconds form
// and the three HTTP-date forms of RFC 9110, all relative to a fixed time, `fixed_now`.
#include "backoff/http.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string_view>

#include "backoff/duration.hpp"
#include "backoff/verdict.hpp"

namespace {

using namespace std::chrono_literals;
using namespace std::chrono;
using backoff::classify_http_status;
using backoff::duration;
using backoff::parse_retry_after;
using backoff::verdict;
using backoff::verdict_kind;

// Sunday, 1 March 2026, 12:00:00 UTC.
const system_clock::time_point fixed_now = sys_days{2026y / March / 1} + 12h;

constexpr auto year = 365 * 24h;

// ---------------------------------------------------------------------------------------------

TEST(ClassifyHttpStatus, InformationalSuccessAndRedirectsSucceed) {
  for (int status : {100, 200, 201, 204, 301, 304, 399}) {
    EXPECT_EQ(classify_http_status(status).kind, verdict_kind::success) << status;
  }
}

TEST(ClassifyHttpStatus, TooManyRequestsAndEvery5xxMayBeRetried) {
  for (int status : {429, 500, 502, 503, 504, 599}) {
    EXPECT_EQ(classify_http_status(status).kind, verdict_kind::retryable) << status;
  }
}

TEST(ClassifyHttpStatus, OtherClientErrorsArePermanent) {
  for (int status : {400, 401, 403, 404, 408, 418, 428, 430, 499}) {
    EXPECT_EQ(classify_http_status(status).kind, verdict_kind::permanent) << status;
  }
}

TEST(ClassifyHttpStatus, StatusesOutsideHttpArePermanent) {
  for (int status : {0, -1, 99, 600, 999}) {
    EXPECT_EQ(classify_http_status(status).kind, verdict_kind::permanent) << status;
  }
}

TEST(ClassifyHttpStatus, CarriesRetryAfterOnlyOnARetryableVerdict) {
  EXPECT_EQ(classify_http_status(503, 5s), verdict::retryable(5s));
  EXPECT_EQ(classify_http_status(429, 120s).retry_after, std::optional<duration>{120s});
  EXPECT_EQ(classify_http_status(503).retry_after, std::nullopt);
  EXPECT_EQ(classify_http_status(404, 5s), verdict::permanent());
  EXPECT_EQ(classify_http_status(200, 5s), verdict::success());
}

// ---------------------------------------------------------------------------------------------
// Retry-After: delay-seconds.

TEST(ParseRetryAfter, ReadsDelaySeconds) {
  EXPECT_EQ(parse_retry_after("120", fixed_now), std::optional<duration>{120s});
  EXPECT_EQ(parse_retry_after("0", fixed_now), std::optional<duration>{0s});
  EXPECT_EQ(parse_retry_after("007", fixed_now), std::optional<duration>{7s});
}

TEST(ParseRetryAfter, IgnoresSurroundingBlanks) {
  EXPECT_EQ(parse_retry_after(" 5 ", fixed_now), std::optional<duration>{5s});
  EXPECT_EQ(parse_retry_after("\t60\t", fixed_now), std::optional<duration>{60s});
}

TEST(ParseRetryAfter, HugeDelaySecondsSaturateInsteadOfWrapping) {
  const auto huge = parse_retry_after("99999999999999999999999999999999", fixed_now);
  ASSERT_TRUE(huge.has_value());
  EXPECT_GT(*huge, 290 * year);
  EXPECT_EQ(parse_retry_after("9223372036854775807", fixed_now), huge);
  // The largest whole number of seconds that fits in int64 nanoseconds is kept exactly.
  EXPECT_EQ(parse_retry_after("9223372036", fixed_now), std::optional<duration>{9'223'372'036s});
}

// ---------------------------------------------------------------------------------------------
// Retry-After: HTTP-date, three forms.

TEST(ParseRetryAfter, ReadsAnImfFixdateRelativeToNow) {
  EXPECT_EQ(parse_retry_after("Sun, 01 Mar 2026 12:02:00 GMT", fixed_now),
            std::optional<duration>{120s});
  EXPECT_EQ(parse_retry_after("Tue, 10 Mar 2026 13:30:15 GMT", fixed_now),
            std::optional<duration>{9 * 24h + 1h + 30min + 15s});
}

TEST(ParseRetryAfter, ReadsAnRfc850DateRelativeToNow) {
  EXPECT_EQ(parse_retry_after("Sunday, 01-Mar-26 12:02:00 GMT", fixed_now),
            std::optional<duration>{120s});
}

TEST(ParseRetryAfter, ReadsAnAsctimeDateRelativeToNow) {
  EXPECT_EQ(parse_retry_after("Sun Mar  1 12:02:00 2026", fixed_now),
            std::optional<duration>{120s});
  EXPECT_EQ(parse_retry_after("Tue Mar 10 12:00:00 2026", fixed_now),
            std::optional<duration>{9 * 24h});
}

TEST(ParseRetryAfter, ADateIsExactAgainstANowWithAFractionOfASecond) {
  EXPECT_EQ(parse_retry_after("Sun, 01 Mar 2026 12:02:00 GMT", fixed_now + 250ms),
            std::optional<duration>{119750ms});
  EXPECT_EQ(parse_retry_after("Sun, 01 Mar 2026 12:00:00 GMT", fixed_now + 250ms),
            std::optional<duration>{0s});
}

TEST(ParseRetryAfter, APastOrPresentDateGivesZero) {
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", fixed_now),
            std::optional<duration>{0s});
  EXPECT_EQ(parse_retry_after("Sun, 01 Mar 2026 11:59:59 GMT", fixed_now),
            std::optional<duration>{0s});
  EXPECT_EQ(parse_retry_after("Sun, 01 Mar 2026 12:00:00 GMT", fixed_now),
            std::optional<duration>{0s});
}

TEST(ParseRetryAfter, InvalidValuesAreIgnored) {
  for (std::string_view bad : {
           "",
           "   ",
           "-1",
           "+5",
           "1.5",
           "12s",
           "0x10",
           "5 5",
           "tomorrow",
           "Sun, 31 Feb 2026 12:00:00 GMT",    // no such day
           "Sun, 01 Mar 2026 24:00:00 GMT",    // hour 24
           "Sun, 01 Mar 2026 12:60:00 GMT",    // minute 60
           "Sun, 1 Mar 2026 12:02:00 GMT",     // IMF-fixdate has two-digit days
           "Sun, 01 Mar 2026 12:02:00 UTC",    // must be GMT
           "Sun, 01 Mar 2026 12:02:00 GMT x",  // trailing text
           "sun, 01 mar 2026 12:02:00 GMT",    // names are case-sensitive
           "Sun, 01 Foo 2026 12:02:00 GMT",
           "Sunday, 01-Mar-2026 12:02:00 GMT",  // RFC 850 has a two-digit year
           "Sun Mar 1 12:02:00 2026",           // asctime pads a one-digit day with a blank
           "2026-03-01T12:02:00Z",              // ISO 8601 is not an HTTP-date
       }) {
    EXPECT_EQ(parse_retry_after(bad, fixed_now), std::nullopt) << "\"" << bad << "\"";
  }
}

TEST(ParseHttpDate, TheThreeFormsOfTheRfcExampleAreTheSameInstant) {
  const system_clock::time_point expected = sys_days{1994y / November / 6} + 8h + 49min + 37s;
  EXPECT_EQ(backoff::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), expected);
  EXPECT_EQ(backoff::parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), expected);
  EXPECT_EQ(backoff::parse_http_date("Sun Nov  6 08:49:37 1994"), expected);
}

TEST(ParseHttpDate, ReadsTwoDigitRfc850YearsAroundTheCentury) {
  EXPECT_EQ(backoff::parse_http_date("Thursday, 01-Jan-70 00:00:00 GMT"),
            system_clock::time_point{});
  EXPECT_EQ(backoff::parse_http_date("Friday, 01-Jan-49 00:00:00 GMT"),
            system_clock::time_point{sys_days{2049y / January / 1}});
}

TEST(ParseHttpDate, RejectsTextThatIsNotADate) {
  EXPECT_EQ(backoff::parse_http_date("120"), std::nullopt);
  EXPECT_EQ(backoff::parse_http_date("Sun, 29 Feb 2026 00:00:00 GMT"), std::nullopt);  // not leap
  EXPECT_NE(backoff::parse_http_date("Sat, 29 Feb 2028 00:00:00 GMT"), std::nullopt);  // leap
}

// A date beyond what int64 nanoseconds since 1970 can hold (April 2262) is still a valid
// HTTP-date. Its delay must be exact when it fits in a duration (about 237 years here), and
// saturate when it does not ("delays beyond about 292 years saturate"), never wrap around.
TEST(ParseRetryAfter, DatesBeyondYear2262GiveTheirDelayInsteadOfWrapping) {
  const duration to_2263 = duration_cast<duration>(sys_seconds{sys_days{2263y / January / 1}} -
                                                   time_point_cast<seconds>(fixed_now));
  EXPECT_EQ(parse_retry_after("Mon, 01 Jan 2263 00:00:00 GMT", fixed_now),
            std::optional<duration>{to_2263});
  const auto far = parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", fixed_now);
  ASSERT_TRUE(far.has_value());
  EXPECT_GT(*far, 290 * year);
}

TEST(ParseRetryAfter, DatesLongBefore1970AreInThePast) {
  EXPECT_EQ(parse_retry_after("Mon, 01 Jan 0001 00:00:00 GMT", fixed_now),
            std::optional<duration>{0s});
  EXPECT_EQ(parse_retry_after("Mon, 01 Jan 1900 00:00:00 GMT", fixed_now),
            std::optional<duration>{0s});
}

}  // namespace
