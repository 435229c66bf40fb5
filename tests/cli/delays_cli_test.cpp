// SPDX-License-Identifier: Apache-2.0
// `backoff delays` and `backoff presets` as scripts use them: formats, determinism, exit statuses
// and one-line errors (SPEC 6.1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

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
        bad_call{{"delays", "--policy", "grpc", "--seed", "99999999999999999999999"}, "too large"},
        bad_call{{"delays", "--policy", "grpc", "--runs", "2.5"}, "--runs"},
        bad_call{{"delays", "--policy", "grpc", "--bogus"}, "--bogus"},
        bad_call{{"delays"}, "--policy"},
        bad_call{{"delays", "--policy", "grpc", "--attempts", "100000", "--runs", "1000"},
                 "use --format csv"},
        bad_call{{"nonsense"}, "nonsense"}, bad_call{{}, "subcommand"}));

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
