// SPDX-License-Identifier: Apache-2.0
// The one size parser (config/size.hpp) that --memory-limit, --replay-stdin-limit and every SIZE
// option read: each documented form, "none" only where a limit allows it, and the refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "config/exit_status.hpp"
#include "config/numbers.hpp"
#include "config/size.hpp"

namespace {

using backoff::config::parse_size;

std::uint64_t size_of(const char* text, backoff::config::size_syntax syntax = {}) {
  std::string why;
  const auto bytes = parse_size(text, why, syntax);
  EXPECT_TRUE(bytes.has_value()) << text << ": " << why;
  return bytes.value_or(~std::uint64_t{0});
}

TEST(SizeParser, AcceptsTheDocumentedForms) {
  EXPECT_EQ(size_of("100000"), 100000U);
  EXPECT_EQ(size_of("12B"), 12U);
  EXPECT_EQ(size_of("4K"), 4096U);
  EXPECT_EQ(size_of("4KiB"), 4096U);
  EXPECT_EQ(size_of("4KB"), 4000U);
  EXPECT_EQ(size_of("512MiB"), 512ULL << 20);
  EXPECT_EQ(size_of("512M"), 512ULL << 20);
  EXPECT_EQ(size_of("2MB"), 2'000'000U);
  EXPECT_EQ(size_of("4GiB"), 4ULL << 30);
  EXPECT_EQ(size_of("1.5G"), 3ULL << 29);
  EXPECT_EQ(size_of("2GB"), 2'000'000'000ULL);
  EXPECT_EQ(size_of("1TiB"), 1ULL << 40);
  EXPECT_EQ(size_of("1T"), 1ULL << 40);
  EXPECT_EQ(size_of("3TB"), 3'000'000'000'000ULL);
  EXPECT_EQ(size_of("512 MiB"), 512ULL << 20);  // a space before the unit
  EXPECT_EQ(size_of("0.5KiB"), 512U);
}

TEST(SizeParser, NoneIsZeroForALimitOnly) {
  EXPECT_EQ(size_of("none"), 0U);
  EXPECT_EQ(size_of("0"), 0U);
  std::string why;
  EXPECT_FALSE(parse_size("none", why, {.none = false}));
  EXPECT_EQ(why, "expected a size such as 512MiB or 4GiB");
  EXPECT_EQ(size_of("0", {.none = false}), 0U);  // zero bytes, still a size
}

TEST(SizeParser, RefusesWhatIsNotASize) {
  for (const char* bad : {"", "MiB", "-1", "1e3", "4 GiBs", "4gib", "0x10", "1..5M", " 4GiB",
                          "4GiB ", "nonE", "8EiB"}) {
    std::string why;
    EXPECT_FALSE(parse_size(bad, why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  std::string why;
  EXPECT_FALSE(parse_size("9000000TiB", why));
  EXPECT_EQ(why, "too large");
  EXPECT_FALSE(parse_size("4XB", why));
  EXPECT_EQ(why, "unknown unit 'XB'; use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB");
}

TEST(WholeNumbers, DigitsOnlyWithinTheirRange) {
  std::string why;
  EXPECT_EQ(backoff::config::parse_whole_number("42", 1, 100, why), 42U);
  EXPECT_EQ(backoff::config::parse_whole_number("010", 0, 100, why), 10U);  // not octal
  for (const char* bad : {"", "-1", "+1", " 1", "0x10", "101", "0", "1e1"}) {
    why.clear();
    EXPECT_FALSE(backoff::config::parse_whole_number(bad, 1, 100, why)) << bad;
    EXPECT_EQ(why, "expected a whole number from 1 to 100") << bad;
  }
  EXPECT_EQ(backoff::config::parse_whole_number("18446744073709551615", 0, UINT64_MAX, why),
            UINT64_MAX);
  EXPECT_FALSE(backoff::config::parse_whole_number("18446744073709551616", 0, UINT64_MAX, why));
}

TEST(BareSeconds, ANumberIsSecondsAndAUnitIsLeftToTheDurationParser) {
  std::string why;
  EXPECT_EQ(backoff::config::parse_bare_seconds("10", why), 10.0);
  EXPECT_EQ(backoff::config::parse_bare_seconds("1e1", why), 10.0);
  EXPECT_EQ(backoff::config::parse_bare_seconds("2.5", why), 2.5);
  EXPECT_TRUE(why.empty());
  EXPECT_FALSE(backoff::config::parse_bare_seconds("10s", why));  // a duration: not ours
  EXPECT_TRUE(why.empty());
  for (const char* bad : {"-1", "1e10", "nan"}) {
    why.clear();
    EXPECT_FALSE(backoff::config::parse_bare_seconds(bad, why)) << bad;
    EXPECT_EQ(why, "seconds must be from 0 to 1000000000") << bad;
  }
}

TEST(ExitStatus, SignalStatusesAreAsAShellReportsThem) {
  static_assert(backoff::config::status_of_signal(2) == 130);
  static_assert(backoff::config::status_of_signal(15) == 143);
  EXPECT_EQ(backoff::config::exit_tool_error, 125);
  EXPECT_EQ(backoff::config::exit_usage, 2);
}

}  // namespace
