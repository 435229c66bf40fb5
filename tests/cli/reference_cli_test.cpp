// SPDX-License-Identifier: Apache-2.0
// backoff(1) and the bash and zsh completions (src/cli/reference.hpp) agree with --help: every
// option that a subcommand's --help lists is in the man page's section for it and completes in
// bash; the man page formats without a warning; the zsh script parses. The files the build
// installs are the ones `backoff --man` and `backoff --completion` print.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

using backoff::test::run_captured;
using backoff::test::run_cli;
using backoff::test::shell_quote;
using backoff::test::slurp;

const std::vector<std::string> commands{"delays", "presets", "sim",   "sweep", "try",  "forany",
                                        "forall", "script",  "serve", "load",  "proxy"};

// The option spellings a --help lists ("-o,--out VALUE" gives -o and --out).
std::set<std::string> help_options(const std::string& help) {
  std::set<std::string> out;
  const std::regex line(R"(^  (-[^ ]+))");
  std::istringstream in(help);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, line)) continue;
    std::string names = m[1];
    for (std::size_t start = 0; start <= names.size();) {
      const std::size_t comma = names.find(',', start);
      out.insert(names.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

std::string roff_minus(std::string s) {
  std::string out;
  for (const char c : s) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

TEST(Reference, TheManPageHasEveryOptionOfEveryHelp) {
  const auto man = run_cli({"--man"});
  ASSERT_EQ(man.status, 0) << man.err;
  for (const std::string& c : commands) {
    const std::size_t section = man.out.find(".SS " + c + "\n");
    ASSERT_NE(section, std::string::npos) << c;
    const std::size_t next = man.out.find(".SS ", section + 4);
    const std::string text = man.out.substr(section, next - section);
    const auto help = run_cli({c, "--help"});
    const auto options = help_options(help.out);
    EXPECT_GE(options.size(), 3u) << c;
    for (const std::string& o : options) {
      EXPECT_NE(text.find("\\fB" + roff_minus(o) + "\\fR"), std::string::npos)
          << c << " " << o << " is in --help, not in backoff(1)";
    }
  }
  // It formats without a warning.
  const backoff::test::test_scratch scratch("reference");
  const auto page = scratch.dir() / "backoff.1";
  { std::ofstream(page) << man.out; }
  const auto groff = run_captured("groff -man -ww -z " + shell_quote(page.string()));
  EXPECT_EQ(groff.status, 0);
  EXPECT_EQ(groff.err, "");
}

// A repeatable flag takes one value per occurrence, and --help does not suggest a list after
// it: only --merge takes several folders at once (and positionals, which are not listed here).
TEST(Reference, OnlyMergeTakesSeveralValuesAfterOneFlag) {
  const std::regex listed(R"(^  (-[^ ]+) [^ ]+ \.\.\.)");
  for (const std::string& c : commands) {
    const auto help = run_cli({c, "--help"});
    ASSERT_EQ(help.status, 0) << c << help.err;
    std::istringstream in(help.out);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, listed)) {
        EXPECT_EQ(m[1], "--merge") << c << ": " << line;
      }
    }
  }
  // A second value after a repeatable flag is not taken by it.
  const auto proxy =
      run_cli({"proxy", "--upstream", "127.0.0.1:9", "--toxic", "latency(latency=1ms)", "stray"});
  EXPECT_EQ(proxy.status, 2);
  EXPECT_NE(proxy.err.find("unexpected argument 'stray'"), std::string::npos) << proxy.err;
}

// Completes COMP_WORDS in bash with the generated script; the words offered.
std::string bash_complete(const std::string& script, const std::string& words) {
  const std::string line = "source " + shell_quote(script) + "; COMP_WORDS=(" + words +
                           "); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); _backoff; "
                           "printf '%s\\n' \"${COMPREPLY[@]}\"";
  return run_captured("bash -c " + shell_quote(line)).out;
}

TEST(Reference, BashCompletesCommandsOptionsAndScenarioNames) {
  const backoff::test::test_scratch scratch("reference");
  const auto script = (scratch.dir() / "backoff.bash").string();
  const auto printed = run_cli({"--completion", "bash"});
  ASSERT_EQ(printed.status, 0) << printed.err;
  { std::ofstream(script) << printed.out; }
  EXPECT_EQ(bash_complete(script, "backoff s"), "sim\nsweep\nscript\nserve\n");
  EXPECT_EQ(bash_complete(script, "backoff sim tick"), "tick-burst\n");
  EXPECT_EQ(bash_complete(script, "backoff try --tim"), "--times\n--timeout\n");
  EXPECT_EQ(bash_complete(script, "backoff-try --tim"), "--times\n--timeout\n");
  // After --policy, the presets' names (every command that takes one).
  EXPECT_EQ(bash_complete(script, "backoff try --policy aws-"),
            "aws-full\naws-equal\naws-decorrelated\n");
  EXPECT_EQ(bash_complete(script, "backoff delays -p smira-"), "smira-go\n");
  EXPECT_EQ(bash_complete(script, "backoff load --policy grp"), "grpc\n");
  for (const std::string& c : commands) {
    const std::string offered = bash_complete(script, "backoff " + c + " -");
    for (const std::string& o : help_options(run_cli({c, "--help"}).out)) {
      EXPECT_NE(("\n" + offered).find("\n" + o + "\n"), std::string::npos) << c << " " << o;
    }
  }
}

TEST(Reference, TheZshScriptParsesAndCoversEveryCommand) {
  const backoff::test::test_scratch scratch("reference");
  const auto script = scratch.dir() / "_backoff";
  const auto printed = run_cli({"--completion", "zsh"});
  ASSERT_EQ(printed.status, 0) << printed.err;
  { std::ofstream(script) << printed.out; }
  EXPECT_EQ(printed.out.rfind("#compdef backoff backoff-try\n", 0), 0u);
  const auto parsed = run_captured("zsh -n " + shell_quote(script.string()));
  EXPECT_EQ(parsed.status, 0) << parsed.err;
  for (const std::string& c : commands) {
    EXPECT_NE(printed.out.find("_backoff_" + c + "() {"), std::string::npos) << c;
  }
  EXPECT_NE(printed.out.find("tick-burst"), std::string::npos);
  EXPECT_NE(printed.out.find(":policy:(none constant"), std::string::npos);
}

TEST(Reference, TheBuildWritesWhatTheCommandPrints) {
  const std::string dir = std::string(BACKOFF_BUILD_DIR) + "/reference/";
  EXPECT_EQ(slurp(dir + "man1/backoff.1"), run_cli({"--man"}).out);
  EXPECT_EQ(slurp(dir + "completions/backoff"), run_cli({"--completion", "bash"}).out);
  EXPECT_EQ(slurp(dir + "zsh/_backoff"), run_cli({"--completion", "zsh"}).out);
  const auto bad = run_cli({"--completion", "fish"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "backoff: expected 'backoff --man' or 'backoff --completion bash|zsh'\n");
}

}  // namespace

namespace {

// `make demo` builds the retry tool alone, the man page and the completions beside the CLI, and
// says where they are: each target it names exists, and each file it names is one the build makes.
TEST(Reference, MakeDemoBuildsTheToolTheManPageAndTheCompletions) {
  const std::string source = BACKOFF_SOURCE_DIR;
  const auto dry = run_captured("make -n -C " + shell_quote(source) + " demo CI= 2>&1");
  ASSERT_EQ(dry.status, 0) << dry.out;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(dry.out, m, std::regex(R"(cmake --build [^\n]* --target ([^\n]+))")))
      << dry.out;
  std::set<std::string> targets;
  std::istringstream words(m[1].str());
  for (std::string t; words >> t;) targets.insert(t);
  EXPECT_EQ(targets,
            (std::set<std::string>{"backoff_cli", "backoff_try_cli", "backoff_reference"}));
  const auto known =
      run_captured("cmake --build " + shell_quote(BACKOFF_BUILD_DIR) + " --target help 2>&1");
  ASSERT_EQ(known.status, 0) << known.out;
  for (const std::string& t : targets) {
    EXPECT_TRUE(std::regex_search(known.out, std::regex("(^|\\n|\\s)" + t + "(:|\\s)"))) << t;
  }
  // The files it points the user to, relative to the default build folder: made by these targets.
  for (const std::string file : {"bin/backoff-try", "reference/man1/backoff.1",
                                 "reference/completions/backoff", "reference/zsh/_backoff"}) {
    EXPECT_NE(dry.out.find("build/" + file), std::string::npos) << file;
    EXPECT_FALSE(slurp(std::string(BACKOFF_BUILD_DIR) + "/" + file).empty()) << file;
  }
}

}  // namespace
