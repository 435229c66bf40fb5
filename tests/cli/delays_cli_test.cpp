// SPDX-License-Identifier: Apache-2.0
// `backoff delays` and `backoff presets` as scripts use them: formats, determinism, exit statuses
// and one-line errors (SPEC 6.1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backoff/presets.hpp"
#include "cli_runner.hpp"

namespace {

using backoff::test::run_cli;

TEST(DelaysCli, PrintsExactCsvForADeterministicPolicy) {
  const auto r = run_cli({"delays", "--policy", "exponential(initial=1s, factor=2, max=5s)",
                          "--attempts", "4", "--format", "csv"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "run,attempt,delay_s\n1,1,1\n1,2,2\n1,3,4\n1,4,5\n");
  EXPECT_EQ(r.err, "");
}

TEST(DelaysCli, SameSeedSameDelaysOtherSeedOtherDelays) {
  const std::vector<std::string> base{"delays", "--policy", "aws-full", "--attempts", "20",
                                      "--runs", "3",        "--format", "csv"};
  auto with_seed = [&](const char* seed) {
    auto args = base;
    args.insert(args.end(), {"--seed", seed});
    return run_cli(args);
  };
  const auto a = with_seed("7");
  const auto b = with_seed("7");
  const auto c = with_seed("8");
  ASSERT_EQ(a.status, 0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

TEST(DelaysCli, EachRunHasItsOwnStreamWhateverTheNumberOfRuns) {
  const auto one = run_cli({"delays", "--policy", "ftsh", "--runs", "1", "--format", "csv"});
  const auto three = run_cli({"delays", "--policy", "ftsh", "--runs", "3", "--format", "csv"});
  ASSERT_EQ(one.status, 0);
  ASSERT_EQ(three.status, 0);
  EXPECT_EQ(three.out.substr(0, one.out.size()), one.out);
  EXPECT_GT(three.out.size(), one.out.size());
}

TEST(DelaysCli, JsonHasOneArrayPerRunInSeconds) {
  const auto r = run_cli(
      {"delays", "--policy", "constant", "--attempts", "3", "--runs", "2", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["policy"], "constant(initial=5s, max=none, jitter=none)");
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][1], nlohmann::json::parse("[5.0, 5.0, 5.0]"));
}

TEST(DelaysCli, TableShowsEveryAttemptAndTheTotal) {
  const auto r = run_cli({"delays", "--policy", "exponential", "--attempts", "6"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("policy: exponential(initial=2s, factor=2, max=30s, jitter=none)"),
            std::string::npos);
  EXPECT_NE(r.out.find("30s"), std::string::npos);
  EXPECT_NE(r.out.find("total"), std::string::npos);
  EXPECT_NE(r.out.find("1m30s"), std::string::npos);  // 2+4+8+16+30+30 s
}

// The bytes the table printed before it streamed (issue 40), one column per run: each run's own
// stream, advanced together row by row, draws what it drew alone.
TEST(DelaysCli, TableOfSeveralRunsIsExactlyAsBefore) {
  const auto r =
      run_cli({"delays", "--policy", "aws-full", "--attempts", "5", "--runs", "3", "--seed", "9"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "policy: exponential(initial=10ms, factor=2, max=2s, jitter=full)  (seed 9)\n"
            "attempt    run 1    run 2    run 3\n"
            "      1   6.92ms  282.2us  8.072ms\n"
            "      2  11.99ms  9.196ms  7.481ms\n"
            "      3  7.073ms  27.75ms  35.67ms\n"
            "      4  31.56ms  48.34ms  5.345ms\n"
            "      5  146.9ms  52.96ms  142.6ms\n"
            "  total  204.4ms  138.5ms  199.2ms\n");
}

// One run: the column is as wide as its widest cell, found before the first row is printed.
TEST(DelaysCli, TableOfOneRunIsExactlyAsBefore) {
  const auto r = run_cli({"delays", "--policy",
                          "exponential(initial=999ms, factor=10, max=2h, jitter=proportional)",
                          "--attempts", "6", "--seed", "4"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "policy: exponential(initial=999ms, factor=10, max=2h, jitter=proportional, r=0.2)  "
            "(seed 4)\n"
            "attempt     delay\n"
            "      1   960.1ms\n"
            "      2    8.914s\n"
            "      3  1m35.43s\n"
            "      4    19m48s\n"
            "      5      2h1m\n"
            "      6  2h19m21s\n"
            "  total  4h41m50s\n");
}

// The JSON is written as it is drawn, in nlohmann's own layout and number format.
TEST(DelaysCli, JsonIsExactlyAsBefore) {
  const auto r = run_cli({"delays", "--policy", "aws-decorrelated", "--attempts", "2", "--runs",
                          "2", "--format", "json", "--seed", "5"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\n"
            "  \"policy\": \"exponential(initial=5ms, factor=2, max=2s, jitter=decorrelated)\",\n"
            "  \"seed\": 5,\n"
            "  \"attempts\": 2,\n"
            "  \"runs\": [\n"
            "    [\n"
            "      0.013823077,\n"
            "      0.024816827\n"
            "    ],\n"
            "    [\n"
            "      0.013526567,\n"
            "      0.036584669\n"
            "    ]\n"
            "  ]\n"
            "}\n");
}

// Issue 40: the table held about 240 bytes per delay (2.4 GB at ten million) and the JSON about
// 54, and both refused more than ten million. Every format now streams: with the address space
// held to 32 MiB (the CLI alone takes about 11), hundreds of thousands of delays print in full,
// in one long run and across thousands of runs. Before, each table and JSON here died of
// std::bad_alloc. Not under a sanitizer, whose runtime reserves terabytes of address space
// (FullSize: plain builds only).
TEST(DelaysCliFullSize, EveryFormatPrintsHundredsOfThousandsOfDelaysInBoundedMemory) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "an address-space limit does not apply under a sanitizer";
#endif
  struct big_call {
    std::string attempts, runs, format;
    std::size_t lines;  // of stdout
  };
  const std::vector<big_call> calls = {
      {"300000", "1", "table", 300'003},
      {"100", "5000", "table", 103},
      {"1000", "1000", "json", 5 + 1000 * 1002 + 2},
      {"1000", "300", "csv", 300'001},
  };
  for (const auto& c : calls) {
    std::string command = "ulimit -v 32768 && exec " + backoff::test::shell_quote(BACKOFF_CLI_PATH);
    for (const auto& a :
         std::vector<std::string>{"delays", "--policy", "aws-full", "--attempts", c.attempts,
                                  "--runs", c.runs, "--format", c.format}) {
      command += " " + backoff::test::shell_quote(a);
    }
    const auto r = backoff::test::run_captured(command);
    const std::string what = c.attempts + " x " + c.runs + " " + c.format;
    ASSERT_EQ(r.status, 0) << what << ": " << r.err;
    EXPECT_EQ(r.err, "") << what;
    EXPECT_EQ(static_cast<std::size_t>(std::count(r.out.begin(), r.out.end(), '\n')), c.lines)
        << what;
  }
}

// Every usage mistake: exit 2, nothing on stdout, exactly one line on stderr naming the problem.
struct bad_call {
  std::vector<std::string> args;
  std::string fragment;
};

class DelaysCliRejects : public testing::TestWithParam<bad_call> {};

TEST_P(DelaysCliRejects, WithOneLineAndExitTwo) {
  const auto r = run_cli(GetParam().args);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find(GetParam().fragment), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, DelaysCliRejects,
    testing::Values(
        bad_call{{"delays", "--policy", "expo(initial=1s)"}, "unknown policy \"expo\""},
        bad_call{{"delays", "--policy", "exponential(fator=2)"}, "unknown parameter \"fator\""},
        bad_call{{"delays", "--policy", "exponential(initial=1x)"}, "unknown unit \"x\""},
        bad_call{{"delays", "--policy", "exponential(factor=0.5)"}, "factor=0.5"},
        bad_call{{"delays", "--policy", "gcp-iot(max=32s"}, "missing ')'"},
        bad_call{{"delays", "--policy", ""}, "empty"},
        bad_call{{"delays", "--policy", "grpc", "--attempts", "0"}, "--attempts"},
        bad_call{{"delays", "--policy", "grpc", "--attempts", "ten"}, "--attempts"},
        bad_call{{"delays", "--policy", "grpc", "--format", "xml"}, "--format"},
        bad_call{{"delays", "--policy", "grpc", "--seed", "-1"}, "--seed"},
        bad_call{{"delays", "--policy", "grpc", "--seed", "99999999999999999999999"},
                 "--seed: bad seed \"99999999999999999999999\""},
        bad_call{{"delays", "--policy", "grpc", "--runs", "2.5"}, "--runs"},
        bad_call{{"delays", "--policy", "grpc", "--bogus"}, "--bogus"},
        bad_call{{"delays"}, "--policy"}, bad_call{{"nonsense"}, "nonsense"},
        bad_call{{}, "subcommand"}));

TEST(PresetsCli, ShowsEveryPresetWithItsCanonicalSpec) {
  const auto r = run_cli({"presets", "--attempts", "5"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const auto& p : backoff::presets()) {
    EXPECT_NE(r.out.find(std::string(p.name)), std::string::npos) << p.name;
    EXPECT_NE(r.out.find(p.policy.to_string()), std::string::npos) << p.name;
  }
}

TEST(Cli, HelpAndVersionExitZero) {
  EXPECT_EQ(run_cli({"--help"}).status, 0);
  EXPECT_EQ(run_cli({"delays", "--help"}).status, 0);
  const auto v = run_cli({"--version"});
  EXPECT_EQ(v.status, 0);
  EXPECT_NE(v.out.find("backoff "), std::string::npos);
}

}  // namespace
