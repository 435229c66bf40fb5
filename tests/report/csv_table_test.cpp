// SPDX-License-Identifier: Apache-2.0
// The one CSV writer (RFC 4180 quoting) and the one text-table printer.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "report/csv.hpp"
#include "report/text_table.hpp"

namespace {

using backoff::report::csv_field;
using backoff::report::text_table;

TEST(Csv, PlainTextIsLeftAsIs) {
  EXPECT_EQ(csv_field("exponential-full"), "exponential-full");
  EXPECT_EQ(csv_field(""), "");
}

TEST(Csv, CommaQuoteAndLineBreaksAreQuotedWithQuotesDoubled) {
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\rhere"), "\"cr\rhere\"");
}

TEST(TextTable, PadsColumnsAlignsAndTrimsTrailingSpaces) {
  const text_table t{{{"strategy", "p99"}, {"EB", "1.25"}, {"a-long-name", "3"}}, 1};
  EXPECT_EQ(t.render(),
            "strategy      p99\n"
            "EB           1.25\n"
            "a-long-name     3\n");
}

TEST(TextTable, AllRightAlignedByDefault) {
  const text_table t{{{"attempt", "delay"}, {"1", "100ms"}, {"total", "1.1s"}}};
  EXPECT_EQ(t.render(),
            "attempt  delay\n"
            "      1  100ms\n"
            "  total   1.1s\n");
}

TEST(TextTable, ControlCharactersCannotReachTheTerminal) {
  const text_table t{{{"name"}, {"\x1b]0;pwned\x07x"}, {"two\nrows"}}, 1};
  const std::string out = t.render();
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;  // still three rows
}

}  // namespace

namespace {

TEST(Csv, TheReaderReadsBackWhatTheWriterWrote) {
  const std::vector<std::string> names = {"plain", "a,b", "say \"hi\"", "two\nlines", ""};
  std::string text;
  for (const auto& n : names) {
    backoff::report::csv_append(text, n);
    text += ",1\n";
  }
  std::istringstream in(text);
  std::vector<std::string> fields;
  for (const auto& n : names) {
    ASSERT_TRUE(backoff::report::csv_read_record(in, fields));
    ASSERT_EQ(fields.size(), 2u) << n;
    EXPECT_EQ(fields[0], n);
    EXPECT_EQ(fields[1], "1");
  }
  EXPECT_FALSE(backoff::report::csv_read_record(in, fields));
}

}  // namespace
