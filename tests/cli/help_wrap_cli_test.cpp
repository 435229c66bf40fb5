// SPDX-License-Identifier: Apache-2.0
// --help wraps to the terminal's width ($COLUMNS when stdout is not a terminal, else 80): no
// line is wider, but a single word longer than the column, and nothing is lost in the wrapping.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

using backoff::test::run_captured;
using backoff::test::shell_quote;

const std::vector<std::string> help_wrap_commands{"",       "delays", "presets", "sim",
                                                  "sweep",  "try",    "forany",  "forall",
                                                  "script", "serve",  "load",    "proxy"};

std::string help_at(const std::string& columns, const std::string& command) {
  std::string line = "COLUMNS=" + columns + " " + shell_quote(BACKOFF_CLI_PATH);
  if (!command.empty()) line += " " + shell_quote(command);
  const auto r = run_captured(line + " --help");
  EXPECT_EQ(r.status, 0) << command << ": " << r.err;
  return r.out;
}

// The words, in order, whatever the line breaks.
std::vector<std::string> help_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

TEST(HelpWrap, EveryCommandsHelpFitsTheWidthAndKeepsEveryWord) {
  for (const std::string& command : help_wrap_commands) {
    const std::vector<std::string> unwrapped_words = help_words(help_at("1000", command));
    for (const std::size_t width : {60U, 80U, 132U}) {
      const std::string help = help_at(std::to_string(width), command);
      std::istringstream in(help);
      for (std::string line; std::getline(in, line);) {
        if (line.size() <= width) continue;
        // Only a word that cannot be broken: the line holds nothing else.
        const std::vector<std::string> words = help_words(line);
        EXPECT_EQ(words.size(), 1U) << command << " at " << width << ": " << line;
      }
      EXPECT_EQ(help_words(help), unwrapped_words) << command;
    }
  }
  // Unwrapped, the longest line of `load --help` is far over 132 characters: the test is live.
  std::size_t longest = 0;
  std::istringstream in(help_at("1000", "load"));
  for (std::string line; std::getline(in, line);) longest = std::max(longest, line.size());
  EXPECT_GT(longest, 200U);
}

TEST(HelpWrap, NoTerminalAndNoColumnsMeansEighty) {
  const auto r = run_captured("env -u COLUMNS " + shell_quote(BACKOFF_CLI_PATH) + " load --help");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  std::size_t longest = 0;
  for (std::string line; std::getline(in, line);) {
    if (help_words(line).size() > 1) longest = std::max(longest, line.size());
  }
  EXPECT_LE(longest, 80U);
  EXPECT_GT(longest, 70U);
}

}  // namespace
