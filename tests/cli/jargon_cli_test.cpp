// SPDX-License-Identifier: Apache-2.0
// No internal jargon where a user reads: the docs, the README, the scenario files, the public
// headers, and what the binaries print (every command's --help, the man page, `backoff presets`
// as text and JSON) name their sources as a reader would cite them (author, title, year), never
// by the project's own shorthand: "seed 003" for an article, "SPEC 7.2" for a section of a
// planning note users do not have, "issue 23" for a change, or a link into ../shared. ("Round 2"
// is not checked: forany counts rounds.)
// A line that brings one back fails here with its file (or command) and line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::test::run_cli;
using backoff::test::slurp;

// Still to fix, each by the owner of the text; remove an entry once its text is clean (the test
// JargonWhereUsersRead.EveryToleratedEntryIsStillNeeded says when). Whole files, by their path
// from the source root:
const std::set<std::string> jargon_tolerated_files{};
// Fragments of printed text, each with the file that prints it: a line holding one is skipped.
const std::map<std::string, std::string> jargon_tolerated_fragments{};

const std::regex& jargon_pattern() {
  static const std::regex pattern(R"(seed 00[0-9]|spec [0-9]|issue [0-9]|\.\./shared)",
                                  std::regex::icase);
  return pattern;
}

struct jargon_hit {
  std::string where;  // a file or a command
  std::size_t line = 0;
  std::string text;
};

// The lines of `text` with jargon, skipping those that hold a tolerated fragment; `used` collects
// the fragments that were needed.
std::vector<jargon_hit> jargon_in(const std::string& where, const std::string& text,
                                  std::set<std::string>& used) {
  std::vector<jargon_hit> hits;
  std::istringstream in(text);
  std::size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!std::regex_search(line, jargon_pattern())) continue;
    const auto tolerated = std::find_if(
        jargon_tolerated_fragments.begin(), jargon_tolerated_fragments.end(),
        [&](const auto& entry) { return line.find(entry.first) != std::string::npos; });
    if (tolerated != jargon_tolerated_fragments.end()) {
      used.insert(tolerated->first);
      continue;
    }
    hits.push_back({where, number, line});
  }
  return hits;
}

std::string jargon_report(const std::vector<jargon_hit>& hits) {
  std::string out;
  for (const auto& h : hits) out += h.where + ":" + std::to_string(h.line) + ": " + h.text + "\n";
  return out;
}

// The files users read, by path from the source root, sorted.
std::vector<std::string> jargon_user_files() {
  const fs::path root = BACKOFF_SOURCE_DIR;
  const std::vector<std::pair<std::string, std::string>> folders{
      {"docs", ".md"},  {"docs/models", ".md"}, {"scenarios", ".toml"}, {"include/backoff", ".hpp"},
      {"examples", ""},
  };
  std::vector<std::string> files{"README.md"};
  for (const auto& [folder, extension] : folders) {
    const bool deep = folder == "examples";
    auto add = [&](const fs::directory_entry& e) {
      if (!e.is_regular_file()) return;
      if (!extension.empty() && e.path().extension() != extension) return;
      files.push_back(fs::relative(e.path(), root).generic_string());
    };
    if (deep) {
      for (const auto& e : fs::recursive_directory_iterator(root / folder)) add(e);
    } else {
      for (const auto& e : fs::directory_iterator(root / folder)) add(e);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// What the binaries print for a reader: every command's --help, the man page, the presets.
std::vector<std::pair<std::string, std::string>> jargon_printed_texts() {
  const std::vector<std::string> commands{"delays", "presets", "sim",   "sweep", "try",  "forany",
                                          "forall", "script",  "serve", "load",  "proxy"};
  std::vector<std::pair<std::string, std::string>> texts;
  texts.emplace_back("backoff --help", run_cli({"--help"}).out);
  for (const auto& c : commands)
    texts.emplace_back("backoff " + c + " --help", run_cli({c, "--help"}).out);
  texts.emplace_back("backoff --man", run_cli({"--man"}).out);
  texts.emplace_back("backoff presets", run_cli({"presets"}).out);
  texts.emplace_back("backoff presets --format json", run_cli({"presets", "--format", "json"}).out);
  return texts;
}

TEST(JargonWhereUsersRead, TheDocsScenariosHeadersAndExamplesCiteTheirSources) {
  const fs::path root = BACKOFF_SOURCE_DIR;
  std::set<std::string> used;
  std::vector<jargon_hit> hits;
  const std::vector<std::string> files = jargon_user_files();
  ASSERT_GT(files.size(), 40u) << "the scan found too few files to mean anything";
  for (const auto& f : files) {
    if (jargon_tolerated_files.contains(f)) continue;
    const auto found = jargon_in(f, slurp(root / f), used);
    hits.insert(hits.end(), found.begin(), found.end());
  }
  EXPECT_TRUE(hits.empty()) << jargon_report(hits);
}

TEST(JargonWhereUsersRead, WhatTheBinariesPrintCitesItsSources) {
  std::set<std::string> used;
  std::vector<jargon_hit> hits;
  for (const auto& [where, text] : jargon_printed_texts()) {
    ASSERT_FALSE(text.empty()) << where << " printed nothing";
    const auto found = jargon_in(where, text, used);
    hits.insert(hits.end(), found.begin(), found.end());
  }
  EXPECT_TRUE(hits.empty()) << jargon_report(hits);
}

// The presets' sources are citations: the article's title and year, never a shorthand.
TEST(JargonWhereUsersRead, APresetsSourceNamesTheArticle) {
  const std::string presets_json = run_cli({"presets", "--format", "json"}).out;
  EXPECT_NE(presets_json.find(R"x("source": "Exploring backoff (2019), NB")x"), std::string::npos)
      << presets_json;
  EXPECT_NE(presets_json.find(
                R"x("source": "Thain, Exponential Backoff in Distributed Systems (2009)")x"),
            std::string::npos)
      << presets_json;
}

// The check itself: each pattern is caught whatever its case, and ordinary words are not.
TEST(JargonWhereUsersRead, ThePatternCatchesEachFormAndNotOrdinaryText) {
  std::set<std::string> used;
  for (const std::string jargon :
       {"as seed 003 says", "Seed 001 NB", "(SPEC 7.2)", "spec 6.1's rule", "issue 23",
        "(Issue 22)", "see ../shared/seeds/001"}) {
    EXPECT_EQ(jargon_in("t", jargon, used).size(), 1u) << jargon;
  }
  for (const std::string plain :
       {"--seed 1", "the same seed gives the same delays", "--policy SPEC",
        "a spec's canonical text", "one round of 3", "around 2 s",
        "AEONCASE, Improve on exponential backoff (2019)"}) {
    EXPECT_TRUE(jargon_in("t", plain, used).empty()) << plain;
  }
}

// An entry of the allow-lists that nothing needs any more is to be removed, so that the jargon
// cannot come back there unseen.
TEST(JargonWhereUsersRead, EveryToleratedEntryIsStillNeeded) {
  const fs::path root = BACKOFF_SOURCE_DIR;
  std::set<std::string> used;
  for (const auto& f : jargon_tolerated_files) {
    EXPECT_FALSE(jargon_in(f, slurp(root / f), used).empty())
        << f << " has no jargon left: remove it from jargon_tolerated_files";
  }
  for (const auto& [where, text] : jargon_printed_texts()) jargon_in(where, text, used);
  for (const auto& f : jargon_user_files()) jargon_in(f, slurp(root / f), used);
  for (const auto& [fragment, owner] : jargon_tolerated_fragments) {
    EXPECT_TRUE(used.contains(fragment))
        << "'" << fragment << "' (" << owner
        << ") is no longer printed: remove it from jargon_tolerated_fragments";
  }
}

}  // namespace
