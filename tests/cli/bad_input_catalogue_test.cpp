// SPDX-License-Identifier: Apache-2.0
// The bad-input catalogue (issue 9): the one place that lists what `backoff` does with bad input,
// one named case per input. Every CLI case runs the built tool as a user would and asserts
//
//   - the exit status of docs/EXIT_CODES.md (2 for delays, presets, sim, sweep, serve, load;
//     125 for try, forany, forall, script; 1 where the work itself failed), never a crash
//     (a status >= 128 or a death by signal fails the case, as does a tool that hangs);
//   - exactly one line on stderr (no usage dump, no stack trace, no sanitizer report) that
//     contains the expected text: what is wrong and where (the flag, FILE:LINE[:COL], the value);
//   - nothing on stdout: no partial output before the error;
//   - for the retry tool, that the command was never run.
//
// The HTTP cases send raw bytes to one `backoff serve --port 0` and expect the status code and
// the one-line body; the server must answer every other request afterwards and stop cleanly.
//
// The per-command tables (delays_cli_test, sim_cli_test, sweep_cli_test, net_cli_test,
// try_cli_test, script_cli_test) keep their cases; this catalogue adds new ground only.
//
// Each case runs as its own ctest test (one process, one `backoff`), so they run in parallel.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "process_probe.hpp"

namespace {

// A system file of one service, for serve --system.
constexpr const char* one_system_file =
    "scenario = \"one\"\nmodel = \"system\"\n[service.api]\nworkers = 2\n[[clients]]\nto = "
    "\"api\"\narrivals = \"poisson(rate=5)\"\nedge = \"front\"\n[edge.front]\nmax_attempts = "
    "1\n[[strategy]]\nname = \"as-is\"\n";

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using backoff::test::probe_result;
using backoff::test::process_probe;
using backoff::test::slurp;

// ------------------------------------------------------------------------------------------------
// CLI cases
// ------------------------------------------------------------------------------------------------

// In `args`, `expected`, `also` and `must_not`: @FILE@ is the path of a scratch file holding
// `file_text` (named `file_name`), @DIR@ a scratch folder, @MARK@ a path the command would create
// if it ran (the retry tool's cases: it must not).
struct bad_input {
  std::string name;
  std::vector<std::string> args;
  int status = 0;
  std::string expected;  // part of the one stderr line
  std::string also;      // a second part, when one does not pin both what and where
  std::string must_not;  // text the line must not contain (a wrong place, an internal detail)
  std::string file_name;
  std::string file_text;
  bool stdout_empty = true;
};

// gtest prints a failing case's parameter: its name, not its bytes.
void PrintTo(const bad_input& c, std::ostream* os) {
  *os << c.name;
}

bad_input cli(std::string name, std::vector<std::string> args, int status, std::string expected,
              std::string also = {}, std::string must_not = {}) {
  bad_input c;
  c.name = std::move(name);
  c.args = std::move(args);
  c.status = status;
  c.expected = std::move(expected);
  c.also = std::move(also);
  c.must_not = std::move(must_not);
  return c;
}

bad_input with_file(std::string name, std::string file_name, std::string text,
                    std::vector<std::string> args, int status, std::string expected,
                    std::string also = {}) {
  bad_input c = cli(std::move(name), std::move(args), status, std::move(expected), std::move(also));
  c.file_name = std::move(file_name);
  c.file_text = std::move(text);
  return c;
}

// A scenario file for `backoff sim`: the file is the last argument.
bad_input scenario(std::string name, std::string text, std::string expected,
                   std::vector<std::string> more = {}, std::string also = {}) {
  std::vector<std::string> args{"sim", "@FILE@"};
  args.insert(args.end(), more.begin(), more.end());
  return with_file(std::move(name), "scenario.toml", std::move(text), std::move(args), 2,
                   std::move(expected), std::move(also));
}

// An ftsh script checked with `backoff script --check`: a parse error is 125 and FILE:LINE.
bad_input ftsh(std::string name, std::string text, int line, std::string message) {
  return with_file(std::move(name), "script.ftsh", std::move(text), {"script", "--check", "@FILE@"},
                   125, "@FILE@:" + std::to_string(line) + ": ", std::move(message));
}

// The retry tool with a command that would leave a mark if it ran.
std::vector<std::string> retry(std::vector<std::string> args) {
  for (const std::string word : {"--", "sh", "-c", "echo ran > @MARK@"}) args.push_back(word);
  return args;
}

// A scenario that is right in every respect, for the cases that break it with --set.
const std::string good_scenario =
    "scenario = \"x\"\nmodel = \"one-client-burst\"\n[workload]\noperations = 10\n"
    "[[strategy]]\nname = \"a\"\npolicy = \"constant(initial=10ms)\"\n";

std::string scenario_head() {
  return "scenario = \"x\"\nmodel = \"one-client-burst\"\n";
}

std::string strategy(const std::string& body) {
  return "[[strategy]]\nname = \"a\"\n" + body;
}

// The known-policies list is long; the cases pin the beginning of the message.
std::vector<bad_input> cli_cases() {
  std::vector<bad_input> c;

  // --- Top level -------------------------------------------------------------------------------
  c.push_back(cli("TopEmptyCommand", {""}, 2, "backoff: unknown command '' (commands: delays,"));
  c.push_back(cli("TopHelpIsNotACommand", {"help"}, 2, "backoff: unknown command 'help'"));
  c.push_back(cli("TopUnknownFlag", {"--bogus"}, 2, "--bogus"));

  // --- Policy specs (through delays unless another command is named) ---------------------------
  c.push_back(cli("PolicyExtraCloseParen", {"delays", "--policy", "exponential(initial=1s))"}, 2,
                  "backoff delays: bad policy \"exponential(initial=1s))\": unexpected text \")\" "
                  "at column 24 after ')'"));
  c.push_back(cli("PolicyCloseParenWithoutOpen", {"delays", "--policy", "exponential)"}, 2,
                  "unexpected \")\" at column 12 after \"exponential\""));
  c.push_back(cli("PolicyOpenParenWithoutName", {"delays", "--policy", "(initial=1s)"}, 2,
                  "bad policy \"(initial=1s)\": expected a name at column 1, found \"(\""));
  c.push_back(cli("PolicyTrailingGarbage", {"delays", "--policy", "exponential(initial=1s) junk"},
                  2, "unexpected text \"junk\" at column 25 after ')'"));
  c.push_back(cli("PolicyTrailingComma", {"delays", "--policy", "exponential(initial=1s,)"}, 2,
                  "expected a parameter name at column 24, found \")\""));
  c.push_back(cli("PolicyMissingParameterName", {"delays", "--policy", "exponential(=1s)"}, 2,
                  "expected a parameter name at column 13, found \"=\""));
  c.push_back(cli("PolicyEmptyValue", {"delays", "--policy", "exponential(initial=)"}, 2,
                  "parameter \"initial\" has an empty value"));
  c.push_back(cli("PolicyNamesAreCaseSensitive", {"delays", "--policy", "EXPONENTIAL"}, 2,
                  "bad policy \"EXPONENTIAL\": unknown policy \"EXPONENTIAL\" (known: constant,"));
  c.push_back(cli("PolicyRepeatedParameter",
                  {"delays", "--policy", "exponential(initial=1s,initial=2s)"}, 2,
                  "parameter \"initial\" given twice"));
  c.push_back(cli("PolicyStepOnExponential", {"delays", "--policy", "exponential(step=1s)"}, 2,
                  "parameter \"step\" applies only to the linear schedule"));
  c.push_back(cli("PolicySigmaWithFullJitter",
                  {"delays", "--policy", "exponential(jitter=full,sigma=0.1)"}, 2,
                  "parameter \"sigma\" applies only to jitter=gaussian"));
  c.push_back(cli("PolicyUnknownJitter", {"delays", "--policy", "exponential(jitter=bogus)"}, 2,
                  "unknown jitter \"bogus\" (known: none, full, equal,"));
  c.push_back(cli("PolicyMaxBelowInitial", {"delays", "--policy", "exponential(initial=5s,max=1s)"},
                  2, "max (1s) is smaller than initial (5s)"));
  c.push_back(cli("PolicyProportionalROutOfRange",
                  {"delays", "--policy", "exponential(jitter=proportional, r=1.5)"}, 2,
                  "r=1.5 must be between 0 and 1"));
  c.push_back(cli("PolicyMultiplicativeLoAboveHi",
                  {"delays", "--policy", "exponential(jitter=multiplicative, lo=2, hi=1)"}, 2,
                  "multiplicative jitter needs 0 <= lo <= hi (lo=2, hi=1)"));
  c.push_back(cli("PolicyNegativeSigma",
                  {"delays", "--policy", "constant(initial=1s,jitter=gaussian,sigma=-1)"}, 2,
                  "sigma=-1 must be a finite number >= 0"));
  c.push_back(cli("PolicyBadCap", {"delays", "--policy", "exponential(cap=middle)"}, 2,
                  "cap=middle must be before or after"));
  c.push_back(cli("PolicyBadBoolean", {"delays", "--policy", "exponential(jitter_first=maybe)"}, 2,
                  "jitter_first=maybe must be true or false"));
  c.push_back(cli("PolicyNegativeDuration", {"delays", "--policy", "exponential(initial=-1s)"}, 2,
                  "initial: bad duration \"-1s\": negative durations are not allowed"));
  c.push_back(cli("PolicyNegativeStep", {"delays", "--policy", "linear(step=-1s)"}, 2,
                  "step: bad duration \"-1s\": negative durations are not allowed"));
  c.push_back(cli("PolicyNanDuration", {"delays", "--policy", "exponential(initial=nan)"}, 2,
                  "initial: bad duration \"nan\": expected a number at position 1"));
  c.push_back(cli("PolicyBareNumberDuration", {"delays", "--policy", "exponential(initial=1)"}, 2,
                  "initial: bad duration \"1\": missing unit after \"1\""));
  c.push_back(cli("PolicyHugeDuration",
                  {"delays", "--policy", "exponential(initial=99999999999999999999h)"}, 2,
                  "initial: bad duration \"99999999999999999999h\": too large"));
  c.push_back(cli("PolicyNanFactor", {"delays", "--policy", "exponential(factor=nan)"}, 2,
                  "factor=nan is not a number"));
  c.push_back(
      cli("PolicyInfFactor", {"delays", "--policy", "exponential(factor=inf)"}, 2, "factor=inf"));
  c.push_back(cli("PolicyOverflowingFactor", {"delays", "--policy", "exponential(factor=1e400)"}, 2,
                  "factor=1e400", "too large"));
  c.push_back(cli("PolicyInTryTrailingGarbage",
                  retry({"try", "--policy", "constant(initial=1s) x"}), 125,
                  "backoff try: bad policy \"constant(initial=1s) x\": unexpected text \"x\""));
  c.push_back(cli("PolicyInForallNegativeStep",
                  retry({"forall", "--policy", "linear(step=-1s)", "a"}), 125,
                  "backoff forall: bad policy \"linear(step=-1s)\": step: bad duration"));
  c.push_back(cli("PolicyInLoadTrailingGarbage", {"load", "--policy", "constant(initial=1s) x"}, 2,
                  "backoff load: bad policy \"constant(initial=1s) x\": unexpected text \"x\""));

  // --- delays and presets flags ----------------------------------------------------------------
  c.push_back(
      cli("DelaysAttemptsOverflow",
          {"delays", "--policy", "grpc", "--attempts", "99999999999999999999"}, 2,
          "--attempts: bad number \"99999999999999999999\" (expected a whole number from 1 to "
          "100000000)"));
  c.push_back(cli("DelaysRunsZero", {"delays", "--policy", "grpc", "--runs", "0"}, 2,
                  "--runs: bad number \"0\" (expected a whole number from 1 to 100000)"));
  c.push_back(cli("DelaysStrayArgument", {"delays", "--policy", "grpc", "stray"}, 2,
                  "backoff delays: unexpected argument 'stray'"));
  c.push_back(cli("DelaysPolicyTwice", {"delays", "--policy", "grpc", "--policy", "grpc"}, 2,
                  "backoff delays: --policy: given 2 times; give it once"));
  c.push_back(cli("DelaysPlotWithoutValue", {"delays", "--policy", "grpc", "--plot"}, 2,
                  "--plot: needs a value (PREFIX)"));
  c.push_back(
      cli("DelaysPlotEmptyPrefix", {"delays", "--policy", "grpc", "--plot", ""}, 2, "--plot"));
  c.push_back(cli("PresetsAttemptsAboveRange", {"presets", "--attempts", "1001"}, 2,
                  "--attempts: bad number \"1001\" (expected a whole number from 1 to 1000)"));
  c.push_back(cli("PresetsSeedNotANumber", {"presets", "--seed", "x"}, 2, "--seed"));
  c.push_back(cli("PresetsStrayArgument", {"presets", "stray"}, 2,
                  "backoff presets: unexpected argument 'stray'"));

  // --- sim and sweep flags ---------------------------------------------------------------------
  c.push_back(cli("SimUnknownFlag", {"sim", "--bogus"}, 2, "unknown option '--bogus'"));
  // Several extra words are named in the order they were given.
  c.push_back(cli("SimUnknownFlags", {"sim", "--aa", "--bb"}, 2,
                  "backoff sim: unknown options '--aa --bb'"));
  c.push_back(cli("PresetsStrayArguments", {"presets", "x", "y", "z"}, 2,
                  "backoff presets: unexpected arguments 'x y z'"));
  c.push_back(
      cli("SimThreadsAboveRange", {"sim", "one-client-burst", "--threads", "99999999999"}, 2,
          "--threads: bad number \"99999999999\" (expected a whole number from 1 to 4096)"));
  c.push_back(cli("SimSetWithoutValue", {"sim", "one-client-burst", "--set"}, 2,
                  "--set: needs a value (VALUE)"));
  c.push_back(cli("SimSetWithoutEquals", {"sim", "one-client-burst", "--set", "noequals"}, 2,
                  "--set noequals: expected key=value"));
  c.push_back(cli("SimSetWithoutKey", {"sim", "one-client-burst", "--set", "=3"}, 2,
                  "--set =3: expected key=value"));
  c.push_back(cli("SimSetNanRate", {"sim", "one-client-burst", "--set", "workload.rate_per_s=nan"},
                  2, "--set workload.rate_per_s: workload.rate_per_s: nan is out of range"));
  c.push_back(cli("SimSetInfRate", {"sim", "one-client-burst", "--set", "workload.rate_per_s=inf"},
                  2, "workload.rate_per_s: inf is out of range"));
  c.push_back(cli("SimSetUnknownModel", {"sim", "one-client-burst", "--set", "model=\"nope\""}, 2,
                  "--set model: model: unknown model 'nope' (known: "));
  c.push_back(cli("SimSetNegativeDuration",
                  {"sim", "one-client-burst", "--set", "server.connect=\"-1s\""}, 2,
                  "--set server.connect: server.connect: bad duration \"-1s\": negative"));
  c.push_back(cli("SimSetOverflowingDuration",
                  {"sim", "one-client-burst", "--set", "run.limit=\"99999999999999999999h\""}, 2,
                  "--set run.limit: run.limit: bad duration \"99999999999999999999h\": too large"));
  c.push_back(
      cli("SimSetOverflowingInteger",
          {"sim", "one-client-burst", "--set", "workload.operations=99999999999999999999999"}, 2,
          "--set workload.operations: ", "99999999999999999999999 is out of range"));
  c.push_back(cli("SimSetArrayOfTables",
                  {"sim", "one-client-burst", "--set", "strategy.policy=\"grpc\""}, 2,
                  "--set strategy.policy: strategy is not a table"));
  c.push_back(cli("SimOutEmpty", {"sim", "one-client-burst", "--out", ""}, 2, "--out"));
  {
    bad_input folder =
        cli("SimScenarioIsAFolder", {"sim", "@DIR@"}, 2, "@DIR@: ", "folder", "no such file");
    c.push_back(folder);
  }
  c.push_back(
      cli("SweepMergeWithoutValue", {"sweep", "--merge"}, 2, "--merge: needs a value (VALUE)"));
  c.push_back(cli("SweepMergeADevice", {"sweep", "--merge", "/dev/zero"}, 2,
                  "/dev/zero: not a shard file or a folder of shards"));
  c.push_back(cli("SweepShardNotNumbers",
                  {"sweep", "outage-tipping", "--shard", "a/b", "--out", "x"}, 2,
                  "--shard: expected I/N such as 2/8, got 'a/b'"));
  c.push_back(cli("SweepShardOverflow",
                  {"sweep", "outage-tipping", "--shard",
                   "99999999999999999999/99999999999999999999", "--out", "x"},
                  2, "--shard: expected I/N such as 2/8, got '99999999999999999999/"));
  c.push_back(cli("SweepUnknownFlag", {"sweep", "outage-tipping", "--bogus"}, 2,
                  "unknown option '--bogus'"));
  c.push_back(cli("SweepSetEmptyList",
                  {"sweep", "outage-tipping", "--set", "sweep.outage.duration=[]"}, 2,
                  "--set sweep.outage.duration", "the list is empty"));
  c.push_back(cli("SweepSetUnknownKey", {"sweep", "outage-tipping", "--set", "sweep.nope=[1]"}, 2,
                  "--set sweep.nope", "unknown key", ":0:0"));

  // --- Scenario files --------------------------------------------------------------------------
  c.push_back(scenario("ScenarioSyntaxError", scenario_head() + "[workload\noperations = 10\n",
                       "backoff sim: @FILE@:3:10: Error while parsing table header"));
  c.push_back(scenario("ScenarioUnknownTopLevelKey",
                       scenario_head() + "bogus = 3\n" + strategy("policy = \"constant\"\n"),
                       "@FILE@:3:1: unknown key 'bogus'"));
  c.push_back(scenario("ScenarioUnknownStrategyKey",
                       scenario_head() + strategy("strategy = \"constant\"\n"),
                       "@FILE@:5:1: unknown strategy key 'strategy' (known: name, policy,"));
  c.push_back(scenario("ScenarioStrategyOfWrongType", scenario_head() + "strategy = 3\n",
                       "@FILE@:3:12: strategy: expected [[strategy]] tables"));
  c.push_back(scenario("ScenarioMissingName",
                       "model = \"one-client-burst\"\n" + strategy("policy = \"constant\"\n"),
                       "@FILE@: scenario: missing: every scenario needs a name"));
  c.push_back(scenario("ScenarioStrategyMissingName",
                       scenario_head() + "[[strategy]]\npolicy = \"constant\"\n",
                       "@FILE@:3:1: strategy: missing name"));
  c.push_back(scenario(
      "ScenarioNegativeRate",
      scenario_head() + "[workload]\nrate_per_s = -5.0\n" + strategy("policy = \"constant\"\n"),
      "@FILE@:4:14: workload.rate_per_s: -5 is out of range"));
  c.push_back(
      scenario("ScenarioUnknownModel",
               "scenario = \"x\"\nmodel = \"warp-drive\"\n" + strategy("policy = \"constant\"\n"),
               "@FILE@:2:9: model: unknown model 'warp-drive' (known: "));
  c.push_back(scenario("ScenarioUnknownWindow",
                       scenario_head() + strategy("window = \"vegas()\"\n"), "@FILE@:5:", {},
                       "strategy.window: bad window \"vegas()\": unknown window"));
  c.push_back(
      scenario("ScenarioUnknownBudget",
               scenario_head() + strategy("policy = \"constant\"\nbudget = \"bucket(max=1)\"\n"),
               "@FILE@:6:", {}, "strategy.budget: bad budget \"bucket(max=1)\": unknown budget"));
  c.push_back(
      scenario("ScenarioThrottleOutOfRange",
               scenario_head() + strategy("policy = \"constant\"\nthrottle = \"sre(k=0)\"\n"),
               "@FILE@:6:", {}, "strategy.throttle: bad throttle \"sre(k=0)\": k=0 must be in"));
  c.push_back(scenario("ScenarioPolicyTrailingGarbage",
                       scenario_head() + strategy("policy = \"constant(initial=1s) x\"\n"),
                       "@FILE@:5:", {},
                       "strategy.policy: bad policy \"constant(initial=1s) x\": unexpected text"));
  c.push_back(scenario("ScenarioPolicyNanFactor",
                       scenario_head() + strategy("policy = \"exponential(factor=nan)\"\n"),
                       "@FILE@:5:", {},
                       "strategy.policy: bad policy \"exponential(factor=nan)\": factor=nan"));
  c.push_back(scenario("ScenarioNegativeSeed",
                       scenario_head() + "seed = -1\n" + strategy("policy = \"constant\"\n"),
                       "@FILE@:3:8: seed: -1 is out of range"));
  c.push_back(scenario("ScenarioNegativeMaxAttempts",
                       scenario_head() + strategy("policy = \"constant\"\nmax_attempts = -2\n"),
                       "@FILE@:6:16: strategy.max_attempts: expected an integer >= 0"));
  c.push_back(scenario(
      "ScenarioStrategyNameTwice",
      scenario_head() + strategy("policy = \"constant\"\n") + strategy("policy = \"constant\"\n"),
      "@FILE@:6:1: strategy: name 'a' used twice"));
  c.push_back(scenario("ScenarioKeyTwice", "scenario = \"x\"\nscenario = \"y\"\n",
                       "@FILE@:2:12: Error while parsing key-value pair: cannot redefine"));
  c.push_back(scenario(
      "ScenarioNegativeDuration",
      scenario_head() + "[server]\nconnect = \"-1s\"\n" + strategy("policy = \"constant\"\n"),
      "@FILE@:4:11: server.connect: bad duration \"-1s\": negative"));
  c.push_back(scenario("ScenarioZeroDelayLoop",
                       scenario_head() + "[server]\nconnect = \"0s\"\nerror = \"0s\"\n" +
                           "max_busy = 1\n" + strategy("policy = \"none\"\n"),
                       "@FILE@:7:1: strategy a: with server.connect + server.error = 0s a refused "
                       "attempt is answered at once"));
  c.push_back(scenario("ScenarioOverflowingDuration",
                       scenario_head() + "[run]\nlimit = \"99999999999999999999h\"\n" +
                           strategy("policy = \"constant\"\n"),
                       "@FILE@:4:9: run.limit: bad duration \"99999999999999999999h\": too large"));
  c.push_back(scenario("ScenarioEmptyFile", "", "@FILE@: scenario: missing"));
  c.push_back(scenario("ScenarioBinaryGarbage",
                       std::string("scenario = \"x\"\n") + std::string("\xff\xfe\x00garbage\n", 11),
                       "@FILE@:1:15: Encountered invalid utf-8 sequence"));
  c.push_back(scenario("ScenarioSetUnknownKey", good_scenario,
                       "backoff sim: --set workload.nope: unknown key",
                       {"--set", "workload.nope=1"}));
  c.push_back(scenario("ScenarioSetBadValue", good_scenario,
                       "--set workload.operations: workload.operations: expected an integer",
                       {"--set", "workload.operations=\"many\""}));

  // --- try, forany, forall flags ---------------------------------------------------------------
  c.push_back(cli("TryTimeoutEmpty", retry({"try", "--timeout", ""}), 125,
                  "backoff try: --timeout: bad duration \"\""));
  c.push_back(cli("TryForEmpty", retry({"try", "--for", ""}), 125,
                  "backoff try: --for: bad duration \"\""));
  c.push_back(cli("TryGraceEmpty", retry({"try", "--grace", ""}), 125,
                  "backoff try: --grace: bad duration \"\""));
  c.push_back(cli("TryPolicyEmpty", retry({"try", "--policy", ""}), 125,
                  "backoff try: bad policy \"\": empty"));
  c.push_back(cli("TryReportEmpty", retry({"try", "--report", ""}), 125, "backoff try: --report"));
  c.push_back(cli("TryTimeoutExponent", retry({"try", "--timeout", "1e400s"}), 125,
                  "backoff try: --timeout: bad duration \"1e400s\" (unknown unit \"e\""));
  c.push_back(cli("TryTimeoutOverflow", retry({"try", "--timeout", "99999999999999999999h"}), 125,
                  "--timeout: bad duration \"99999999999999999999h\" (too large"));
  c.push_back(cli("TryTimeoutNegative", retry({"try", "--timeout", "-1s"}), 125,
                  "--timeout: bad duration \"-1s\" (negative durations are not allowed"));
  c.push_back(cli("TryTimeoutZero", retry({"try", "--timeout", "0"}), 125,
                  "backoff try: --timeout: bad duration \"0\" (must be more than 0)"));
  c.push_back(cli("TryGraceNegative", retry({"try", "--grace", "-5s"}), 125,
                  "--grace: bad duration \"-5s\" (negative"));
  c.push_back(cli("TryEveryBadUnit", retry({"try", "--every", "1x"}), 125,
                  "--every: bad duration \"1x\" (unknown unit \"x\""));
  c.push_back(cli("TryTimesTrailingText", retry({"try", "--times", "3x"}), 125,
                  "--times: bad number \"3x\" (expected a whole number from 0 to 4294967295)"));
  c.push_back(cli("TryTimesWithoutValue", {"try", "--times"}, 125, "backoff try: --times: "));
  c.push_back(cli("TrySeedOverflow", retry({"try", "--seed", "99999999999999999999999"}), 125,
                  "--seed: bad seed \"99999999999999999999999\" (expected a whole number from 0 to "
                  "18446744073709551615)"));
  c.push_back(
      cli("TryUnknownShortFlag", retry({"try", "-x"}), 125, "backoff try: unknown option '-x'"));
  c.push_back(cli("TryUntilEmptyItem", retry({"try", "--until", "1,,2"}), 125,
                  "--until: bad status list \"1,,2\""));
  c.push_back(cli("TryWhileNegativeStatus", retry({"try", "--while", "success,-1"}), 125,
                  "--while: bad status list \"success,-1\""));
  c.push_back(cli("ForanyNothingAfterDoubleDash", {"forany", "a", "b", "--"}, 125,
                  "backoff forany: no command given"));
  c.push_back(cli("ForanyTimeoutZero", retry({"forany", "--timeout", "0", "a"}), 125,
                  "backoff forany: --timeout: bad duration \"0\" (must be more than 0)"));
  c.push_back(cli("ForanySeedNegative", retry({"forany", "--seed", "-1", "a"}), 125,
                  "backoff forany: --seed: bad seed \"-1\" (expected a whole number from 0 to "
                  "18446744073709551615)"));
  c.push_back(cli("ForallJobsNegative", retry({"forall", "-j", "-1", "a"}), 125,
                  "backoff forall: --jobs: bad number \"-1\""));
  c.push_back(cli("ForallJobsFraction", retry({"forall", "--jobs", "1.5", "a"}), 125,
                  "--jobs: bad number \"1.5\" (expected a whole number from 0 to"));
  c.push_back(cli("ForallNothingAfterDoubleDash", {"forall", "a", "--"}, 125,
                  "backoff forall: no command given"));

  // --- script flags and files ------------------------------------------------------------------
  c.push_back(cli("ScriptNoFile", {"script"}, 125, "backoff script: missing file (required)"));
  c.push_back(
      cli("ScriptTwoFiles", {"script", "a.ftsh", "b.ftsh"}, 125, "unexpected argument 'b.ftsh'"));
  c.push_back(
      cli("ScriptUnknownFlag", {"script", "--bogus", "x.ftsh"}, 125, "unknown option '--bogus'"));
  c.push_back(cli("ScriptSeedNotANumber", {"script", "--seed", "abc", "x.ftsh"}, 125,
                  "--seed: bad seed \"abc\" (expected a whole number"));
  c.push_back(cli("ScriptEmptyPolicy", {"script", "--policy", "", "x.ftsh"}, 125,
                  "backoff script: bad policy \"\": empty"));
  c.push_back(with_file("ScriptGraceBadUnit", "script.ftsh", "true\n",
                        {"script", "--grace", "1x", "@FILE@"}, 125,
                        "--grace: bad duration \"1x\""));
  c.push_back(cli("ScriptIsAFolder", {"script", "@DIR@"}, 125, "cannot read '@DIR@'"));
  c.push_back(cli("ScriptIsDevZero", {"script", "/dev/zero"}, 125,
                  "cannot read '/dev/zero': larger than 16 MiB: not a script"));

  // --- ftsh parse errors: FILE:LINE ------------------------------------------------------------
  c.push_back(ftsh("FtshAndAnd", "true\necho a && echo b\n", 2, "'&&' is not supported"));
  c.push_back(ftsh("FtshOrOr", "echo a || echo b\n", 1, "'||' is not supported"));
  c.push_back(ftsh("FtshSemicolon", "echo a; echo b\n", 1, "';' is not supported"));
  c.push_back(ftsh("FtshBackground", "sleep 1 &\n", 1, "'&' (running in the background)"));
  c.push_back(ftsh("FtshBackticks", "echo `date`\n", 1, "command substitution with '`'"));
  c.push_back(ftsh("FtshDollarParen", "echo $(date)\n", 1, "command substitution with '$('"));
  c.push_back(ftsh("FtshHereDocument", "cat <<EOF\nx\nEOF\n", 1, "here-documents ('<<')"));
  c.push_back(ftsh("FtshSecondCatch", "try 3 times\n  true\ncatch\n  true\ncatch\n  true\nend\n", 5,
                   "a second 'catch' in the 'try' opened on line 1"));
  c.push_back(ftsh("FtshUnknownUnit", "try for 5 parsecs\n  true\nend\n", 1, "parsecs"));
  c.push_back(ftsh("FtshVariableTryLimit", "try ${N} times\n  true\nend\n", 1,
                   "unexpected \"${N}\" in try limits"));
  c.push_back(ftsh("FtshNegativeTimes", "try -1 times\n  true\nend\n", 1,
                   "unexpected \"-1\" in try limits"));
  c.push_back(ftsh("FtshHugeTimes", "try 99999999999999999999 times\n  true\nend\n", 1,
                   "too many attempts: \"99999999999999999999\""));
  c.push_back(ftsh("FtshHugeDuration", "\ntry for 99999999999999999999h\n  true\nend\n", 2,
                   "bad duration \"99999999999999999999h\": too large"));
  c.push_back(ftsh("FtshZeroDuration", "try for 0s\n  true\nend\n", 1,
                   "a time limit of \"0s\" leaves no time to try"));
  c.push_back(ftsh("FtshZeroTimesOrDuration", "try 0 times or 1s\n  true\nend\n", 1,
                   "the number of attempts must be a whole number of at least 1, not \"0\""));
  c.push_back(ftsh("FtshEveryWithoutDuration", "try 3 times every\n  true\nend\n", 1,
                   "'every' needs a duration"));
  c.push_back(ftsh("FtshEveryBadUnit", "try 3 times every 1x\n  true\nend\n", 1,
                   "bad duration \"1x\": unknown unit \"x\""));
  c.push_back(ftsh("FtshOrWithoutLimit", "try 3 times or\n  true\nend\n", 1,
                   "expected a try limit (as in '3 times' or '1 hour') after 'or'"));
  c.push_back(ftsh("FtshForallWithoutVariable", "forall\n  true\nend\n", 1,
                   "'forall' needs a variable and items"));
  c.push_back(
      ftsh("FtshForWithoutItems", "for i in\n  true\nend\n", 1, "'for' has no items to loop over"));
  c.push_back(
      ftsh("FtshBadLoopVariable", "forany 1x in a\n  true\nend\n", 1, "bad loop variable \"1x\""));
  c.push_back(ftsh("FtshUnclosedDoubleQuote", "echo \"abc\n", 1,
                   "a double quote (\") opened here is never closed"));
  c.push_back(ftsh("FtshUnclosedBrace", "echo ${unclosed\n", 1, "'${' without a closing '}'"));
  c.push_back(ftsh("FtshEmptyVariableName", "echo ${}\n", 1, "bad variable reference \"${}\""));
  c.push_back(ftsh("FtshRedirectionWithoutFile", "echo >\n", 1,
                   "redirection '>' needs a file name after it"));
  c.push_back(ftsh("FtshTextAfterEnd", "try 2 times\n  true\nend extra\n", 3,
                   "unexpected \"extra\" after 'end'"));
  c.push_back(ftsh("FtshCatchWithoutTry", "catch\n", 1, "'catch' without an open 'try'"));
  // Run, not only checked: an unset variable is the statement's failure, status 1, FILE:LINE.
  {
    bad_input unset = with_file("FtshUnsetVariableAtRunTime", "script.ftsh",
                                "echo ${backoff_catalogue_unset}\n", {"script", "@FILE@"}, 1,
                                "@FILE@:1: variable 'backoff_catalogue_unset' is not set");
    c.push_back(unset);
  }
  c.push_back(with_file("FtshDuplicateClosedDescriptor", "script.ftsh",
                        "sh -c 'echo x >&2' 2>&57\n", {"script", "@FILE@"}, 1,
                        "@FILE@:1: ", "2>&57"));

  // --- serve flags -----------------------------------------------------------------------------
  c.push_back(
      cli("ServePortNegative", {"serve", "--port", "-1"}, 2,
          "backoff serve: --port: bad number \"-1\" (expected a whole number from 0 to 65535)"));
  c.push_back(cli("ServePortNotANumber", {"serve", "--port", "abc"}, 2,
                  "--port: bad number \"abc\" (expected a whole number from 0 to 65535)"));
  c.push_back(cli("ServeHostNotAnAddress", {"serve", "--host", "999.1.1.1", "--port", "0"}, 2,
                  "bad --host '999.1.1.1'"));
  c.push_back(cli("ServeHostEmpty", {"serve", "--host", "", "--port", "0"}, 2, "--host ''"));
  c.push_back(cli("ServeThreadsZero", {"serve", "--threads", "0"}, 2,
                  "--threads: bad number \"0\" (expected a whole number from 1 to 256)"));
  c.push_back(cli("ServeLimitNegative", {"serve", "--limit", "-1"}, 2,
                  "--limit: bad number \"-1\" (expected a whole number from 0 to"));
  c.push_back(cli("ServeMaxConnectionsZero", {"serve", "--max-connections", "0"}, 2,
                  "--max-connections: bad number \"0\" (expected a whole number from 1 to"));
  c.push_back(cli("ServeRetryAfterNegative", {"serve", "--retry-after", "-1s"}, 2,
                  "--retry-after: bad duration \"-1s\" (negative"));
  c.push_back(cli("ServeBaseDelayOverflow", {"serve", "--base-delay", "99999999999999999999h"}, 2,
                  "--base-delay: bad duration \"99999999999999999999h\" (too large"));
  c.push_back(cli("ServeKZero", {"serve", "--k", "0"}, 2, "--k", "0", "--factor"));
  c.push_back(cli("ServeFactorNan", {"serve", "--factor", "nan"}, 2, "--factor", "nan", "--k"));
  c.push_back(cli("ServeFactorInf", {"serve", "--factor", "inf", "--port", "0", "-q"}, 2,
                  "--factor", "inf"));
  c.push_back(cli("ServeExpiredCostAbove100", {"serve", "--expired-cost", "150%"}, 2,
                  "backoff serve: --expired-cost: bad percentage \"150%\" (expected a percentage "
                  "from 0% to 100%, or a fraction from 0 to 1)"));
  c.push_back(cli("ServeExpiredCostNotANumber", {"serve", "--expired-cost", "some"}, 2,
                  "--expired-cost: bad percentage \"some\" (expected a percentage"));
  c.push_back(cli("ServeExpiredCostBareAboveOne", {"serve", "--expired-cost", "5"}, 2,
                  "--expired-cost: bad percentage \"5\" (expected a percentage"));
  c.push_back(cli("ServeUnknownSeedStyleFlag", {"serve", "-bogusFlag", "1"}, 2, "-bogusFlag"));
  c.push_back(cli("ServeStrayArgument", {"serve", "stray"}, 2,
                  "backoff serve: unexpected argument 'stray'"));

  // --- fault flags and schedules (serve; the proxy shares them) ------------------------------
  c.push_back(cli("ServeErrorsBadStatus", {"serve", "--port", "0", "--errors", "5%:abc"}, 2,
                  "backoff serve: --errors: \"5%:abc\": expected RATE[:STATUS]"));
  c.push_back(cli("ServeErrorsRateAbove100", {"serve", "--port", "0", "--errors", "150%"}, 2,
                  "backoff serve: --errors: \"150%\""));
  c.push_back(cli("ServeLatencyNotADuration", {"serve", "--port", "0", "--latency", "soon"}, 2,
                  "backoff serve: --latency: \"soon\": expected a duration"));
  c.push_back(cli("ServeLatencyUnknownDistribution",
                  {"serve", "--port", "0", "--latency", "gamma(mean=5ms)"}, 2,
                  "backoff serve: --latency: bad fault", "'distribution' must be fixed"));
  c.push_back(cli("ServePartialWithoutValue",
                  {"serve", "--port", "0", "--partial-outage", "header=x-shard"}, 2,
                  "backoff serve: --partial-outage: bad fault", "missing 'value'"));
  c.push_back(cli("ServeOutageWithoutLength", {"serve", "--port", "0", "--outage", "10s"}, 2,
                  "backoff serve: --outage: \"10s\": no '+'"));
  c.push_back(cli("ServeSlowBodyWithoutSpeed", {"serve", "--port", "0", "--slow-body", "1KiB"}, 2,
                  "backoff serve: --slow-body: \"1KiB\": expected SIZE@SPEED"));
  c.push_back(cli("ServeFaultUnknownKind", {"serve", "--port", "0", "--fault", "crash()"}, 2,
                  "backoff serve: --fault: bad fault \"crash()\": unknown fault 'crash'"));
  c.push_back(
      cli("ServeFaultCapacityIsTheSimulators",
          {"serve", "--port", "0", "--fault", "capacity(share=50%)"}, 2,
          "backoff serve: capacity(share=50%, rate=100%): this fault is a system service's"));
  c.push_back(with_file("LoadExperimentColdStartIsTheSimulators", "faults.toml",
                        "[[fault]]\nfault = \"cold_start(factor=3, half_life=1s)\"\n",
                        {"load", "--experiment", "@FILE@"}, 2,
                        "backoff load: --experiment: cold_start(factor=3, half_life=1s, "
                        "rate=100%): this fault is a system service's"));
  // --- serve --system: a service of a system file -------------------------------------------
  c.push_back(with_file("ServeSystemWithoutService", "one.toml", one_system_file,
                        {"serve", "--port", "0", "--system", "@FILE@"}, 2,
                        "backoff serve: --system needs --service NAME"));
  c.push_back(with_file("ServeSystemUnknownService", "one.toml", one_system_file,
                        {"serve", "--port", "0", "--system", "@FILE@", "--service", "apx"}, 2,
                        "has no such service (did you mean 'api'?)"));
  c.push_back(with_file(
      "ServeSystemReplicaOutOfRange", "one.toml", one_system_file,
      {"serve", "--port", "0", "--system", "@FILE@", "--service", "api", "--replica", "1"}, 2,
      "backoff serve: --replica 1: service api has 1 replica (0 to 0)"));
  c.push_back(with_file(
      "ServeSystemWithASeedServerFlag", "one.toml", one_system_file,
      {"serve", "--port", "0", "--system", "@FILE@", "--service", "api", "--max-busy", "3"}, 2,
      "backoff serve: --max-busy: a system's service serves as its keys say"));
  c.push_back(with_file(
      "ServeSystemWithCancelOnDisconnect", "one.toml", one_system_file,
      {"serve", "--port", "0", "--system", "@FILE@", "--service", "api", "--cancel-on-disconnect"},
      2,
      "backoff serve: --cancel-on-disconnect: a system's service serves as its "
      "keys say"));
  c.push_back(with_file(
      "ServeSystemWithFaultFlags", "one.toml", one_system_file,
      {"serve", "--port", "0", "--system", "@FILE@", "--service", "api", "--errors", "5%"}, 2,
      "backoff serve: the fault flags do not go with --system"));
  c.push_back(cli("ServeSystemNotASystem",
                  {"serve", "--port", "0", "--system", "outage-recovery", "--service", "api"}, 2,
                  "a scenario of model 'outage-recovery', not a system file"));
  c.push_back(cli("ServeSystemServiceThatCalls",
                  {"serve", "--port", "0", "--system", "system-three-tier", "--service", "app"}, 2,
                  "backoff serve: --service app: it calls db: say where with --upstream"));
  c.push_back(cli("ServeSystemUpstreamWithoutPort",
                  {"serve", "--port", "0", "--system", "system-three-tier", "--service", "app",
                   "--upstream", "db=127.0.0.1"},
                  2, "backoff serve: --upstream db: \"127.0.0.1\" is not HOST:PORT"));
  c.push_back(
      cli("ServeSystemUnknownStrategy",
          {"serve", "--port", "0", "--system", "system-three-tier", "--service", "app",
           "--upstream", "db=127.0.0.1:9", "--strategy", "breaker"},
          2, "backoff serve: --strategy \"breaker\": \"system-three-tier\" has no such strategy",
          "(did you mean 'breakers'?)"));
  c.push_back(cli("ServeUpstreamWithoutSystem",
                  {"serve", "--port", "0", "--workers", "2", "--upstream", "db=127.0.0.1:9"}, 2,
                  "backoff serve: --upstream and --strategy go with --system FILE"));
  c.push_back(cli("ServeWorkersBadDiscipline", {"serve", "--port", "0", "--discipline", "lifx"}, 2,
                  "backoff serve: --discipline:", "(did you mean 'lifo'?)"));
  c.push_back(cli("ServeServiceTimeBadDistribution",
                  {"serve", "--port", "0", "--service-time", "lognormal(median=4ms)"}, 2,
                  "backoff serve: --service-time:", "lognormal needs sigma="));
  c.push_back(cli("ServeServiceKeyFlagWithSystem",
                  {"serve", "--port", "0", "--system", "system-three-tier", "--service", "db",
                   "--workers", "3"},
                  2, "backoff serve: --workers: with --system the file says it"));
  c.push_back(cli("ServeServiceSlowBodyFault",
                  {"serve", "--port", "0", "--workers", "2", "--slow-body", "1KiB@1KiB/s"}, 2,
                  "backoff serve: the fault flags:", "slow_body shapes an HTTP body"));
  c.push_back(cli("ServeServiceWithoutSystem", {"serve", "--port", "0", "--service", "api"}, 2,
                  "backoff serve: --service, --replica and --set name a service of --system FILE"));
  c.push_back(cli("ServeFaultSeedNegative", {"serve", "--port", "0", "--fault-seed", "-1"}, 2,
                  "--fault-seed"));
  c.push_back(cli("ServeFaultsMissingFile",
                  {"serve", "--port", "0", "--faults", "/nonexistent/faults.toml"}, 2,
                  "backoff serve: --faults: cannot read the fault schedule "
                  "\"/nonexistent/faults.toml\": No such file or directory"));
  c.push_back(with_file("ServeFaultsBadSpecInFile", "faults.toml",
                        "[[fault]]\nat = \"1s\"\nfault = \"errors(rate=5%, status=700)\"\n",
                        {"serve", "--port", "0", "--faults", "@FILE@"}, 2,
                        "backoff serve: --faults: @FILE@:3:9: bad fault", "from 200 to 599"));
  c.push_back(with_file(
      "ServeFaultsUnknownKey", "faults.toml", "[[fault]]\nfault = \"errors\"\nwhen = \"1s\"\n",
      {"serve", "--port", "0", "--faults", "@FILE@"}, 2, "@FILE@:3:8: unknown key 'when'"));
  c.push_back(with_file("LoadExperimentScheduleBad", "faults.toml", "[[fault]]\nat = \"1s\"\n",
                        {"load", "--experiment", "@FILE@"}, 2,
                        "backoff load: --experiment: @FILE@:1:1: a [[fault]] without 'fault'"));
  c.push_back(cli("LoadExperimentNeitherOutageNorFile",
                  {"load", "--experiment", "/nonexistent/outage"}, 2,
                  "backoff load: --experiment: cannot read the fault schedule",
                  "'outage' or a fault schedule file"));
  c.push_back(with_file("LoadExperimentScheduleWithUrl", "faults.toml",
                        "[[fault]]\nfault = \"errors\"\n",
                        {"load", "--experiment", "@FILE@", "--url", "http://127.0.0.1:1/api"}, 2,
                        "backoff load: --url: not with --experiment FILE"));

  c.push_back(cli("LoadSystemWithClients",
                  {"load", "--system", "twin-three-tier", "--clients", "5"}, 2,
                  "backoff load: --clients: not with --system (the file's [[clients]]"));
  c.push_back(cli("LoadCompareWithoutSystem", {"load", "--compare"}, 2,
                  "backoff load: --set, --compare and --plot go with --system SCENARIO"));
  c.push_back(cli("LoadSystemNotASystem", {"load", "--system", "outage-recovery"}, 2,
                  "backoff load: --system: builtin/outage-recovery.toml: a scenario of model "
                  "'outage-recovery', not a system"));
  c.push_back(cli("LoadSystemUnknownScenario", {"load", "--system", "twin-three-teir"}, 2,
                  "backoff load: --system:", "twin-three-tier"));
  c.push_back(cli("LoadSystemBadSet", {"load", "--system", "twin-three-tier", "--set", "rate=-5"},
                  2, "backoff load: --system:", "rate"));
  c.push_back(cli("LoadSystemPlotWithoutOut", {"load", "--system", "twin-three-tier", "--plot"}, 2,
                  "backoff load: --plot needs --out DIR"));

  // --- load flags ------------------------------------------------------------------------------
  c.push_back(cli("LoadBreakerBadSpec", {"load", "--breaker", "breaker(kind=rate, threshold=150%)"},
                  2,
                  "backoff load: --breaker: bad breaker \"breaker(kind=rate, threshold=150%)\""));
  c.push_back(cli("LoadHedgeWithPolicy",
                  {"load", "--hedge", "hedge(max_attempts=2, delay=1s)", "--policy", "grpc"}, 2,
                  "backoff load: --hedge replaces retrying (gRPC A6): give it no --policy"));
  c.push_back(cli("LoadHedgeWithMaxAttempts",
                  {"load", "--hedge", "hedge(max_attempts=2)", "--max-attempts", "3"}, 2,
                  "--hedge replaces retrying"));
  c.push_back(cli("LoadHedgeWithWindowAndExponential",
                  {"load", "--hedge", "hedge(max_attempts=2, delay=1s)", "--aimd", "aimd()",
                   "--exponential-backoff"},
                  2,
                  "backoff load: --hedge replaces retrying (gRPC A6): give it no "
                  "--exponential-backoff or --aimd"));
  c.push_back(cli("LoadBudgetMisspelt", {"load", "--budget", "token-buckt(max=10)"}, 2,
                  "backoff load: --budget: bad budget \"token-buckt(max=10)\"", "token-bucket"));
  c.push_back(cli("LoadHedgeBadSpec", {"load", "--hedge", "hedge(delay=1s)"}, 2,
                  "backoff load: --hedge: bad hedge \"hedge(delay=1s)\""));
  c.push_back(
      cli("LoadBreakerKeyed", {"load", "--breaker", "breaker(kind=consecutive, keyed=true)"}, 2,
          "backoff load: --breaker: keyed=true needs keys (hosts, shards or users), and a run has "
          "one --url"));
  c.push_back(cli("LoadUrlWithoutHost", {"load", "--url", "http://"}, 2,
                  "backoff load: bad --url \"http://\": no host"));
  c.push_back(cli("LoadUrlEmpty", {"load", "--url", ""}, 2,
                  "bad --url \"\": expected http://HOST[:PORT][/PATH]"));
  c.push_back(cli("LoadUrlPortZero", {"load", "--url", "http://127.0.0.1:0/api"}, 2,
                  "bad --url \"http://127.0.0.1:0/api\": bad port \"0\""));
  c.push_back(
      cli("LoadDurationZero", {"load", "--duration", "0"}, 2, "--duration", "0", "--report-every"));
  c.push_back(cli("LoadDurationNegative", {"load", "--duration", "-1s"}, 2,
                  "--duration: bad duration \"-1s\""));
  c.push_back(
      cli("LoadTimeoutBadUnit", {"load", "--timeout", "1x"}, 2, "--timeout: bad duration \"1x\""));
  c.push_back(cli("LoadSeedStyleDelayBad", {"load", "-simple-backoff-delay", "xyz"}, 2,
                  "simple-backoff-delay: bad duration \"xyz\""));
  c.push_back(cli("LoadPauseForNegative", {"load", "--experiment", "outage", "--pause-for", "-1s"},
                  2, "--pause-for: bad duration \"-1s\""));
  c.push_back(cli("LoadRateNan", {"load", "--rate", "nan"}, 2,
                  "backoff load: --rate: expected a rate such as 500/s or 500 (per second), got "
                  "\"nan\""));
  c.push_back(cli("LoadRateNotANumber", {"load", "--rate", "abc"}, 2,
                  "--rate: expected a rate such as 500/s or 500 (per second), got \"abc\""));
  c.push_back(cli("LoadRateBadUnit", {"load", "--rate", "500/y"}, 2,
                  "--rate: expected a rate per s, ms, m or h (as 500/s), got \"500/y\""));
  c.push_back(cli("LoadRateZero", {"load", "--rate", "0/s"}, 2,
                  "--rate: a rate must be more than 0, got \"0/s\""));
  c.push_back(cli("LoadRateAndRamp", {"load", "--rate", "5", "--ramp", "0s:5/s"}, 2,
                  "backoff load: give --rate or --ramp, not both"));
  c.push_back(cli("LoadRampNotFromZero", {"load", "--ramp", "10s:5/s"}, 2,
                  "--ramp point 1: the first point is at 0s (where the run starts), got \"10s\""));
  c.push_back(cli("LoadRampBackwards", {"load", "--ramp", "0s:5/s,30s:9/s,20s:1/s"}, 2,
                  "--ramp point 3: times must increase, got \"20s\" after 30s"));
  c.push_back(cli("LoadArrivalUnknown", {"load", "--rate", "5", "--arrival", "uniform"}, 2,
                  "--arrival: expected poisson or constant, got \"uniform\""));
  c.push_back(cli("LoadDeadlineZero", {"load", "--deadline", "0s"}, 2,
                  "--deadline: bad duration \"0s\" (must be more than 0)"));
  c.push_back(cli("LoadMaxInFlightZero", {"load", "--max-in-flight", "0"}, 2,
                  "--max-in-flight: bad number \"0\" (expected a whole number from 1 to 1000000)"));
  c.push_back(cli("LoadConnectionsZero", {"load", "--connections", "0"}, 2,
                  "--connections: bad number \"0\" (expected a whole number from 1 to 100000)"));
  c.push_back(cli("LoadHistogramLogWithExperiment",
                  {"load", "--experiment", "outage", "--histogram-log", "x.hlog"}, 2,
                  "--histogram-log: not with --experiment"));
  c.push_back(cli("LoadBadThrottle", {"load", "--throttle", "sre(bogus=1)"}, 2,
                  "bad throttle \"sre(bogus=1)\": unknown parameter \"bogus\""));
  c.push_back(cli("LoadHistogramLogEmpty", {"load", "--histogram-log", ""}, 2,
                  "--histogram-log: needs a file"));
  c.push_back(
      cli("LoadMaxAttemptsNegative", {"load", "--max-attempts", "-1"}, 2,
          "--max-attempts: bad number \"-1\" (expected a whole number from 0 to 4294967295)"));
  c.push_back(cli("LoadSeedNotANumber", {"load", "--seed", "abc"}, 2, "--seed: bad seed \"abc\""));
  c.push_back(cli("LoadBadWindow", {"load", "--aimd", "aimd(decrease=2)"}, 2,
                  "bad window \"aimd(decrease=2)\": decrease=2 must be between 0 and 1"));
  c.push_back(cli("LoadBadBudget", {"load", "--budget", "token-bucket(ratio=-1)"}, 2,
                  "bad budget \"token-bucket(ratio=-1)\": ratio=-1 must be in"));
  c.push_back(cli("LoadUnresolvableHost",
                  {"load", "--url", "http://no-such-host.invalid/api", "--duration", "1s"}, 1,
                  "no-such-host.invalid", "", "/usr/include"));
  c.push_back(cli("LoadOutEmpty",
                  {"load", "--out", "", "--url", "http://127.0.0.1:1/api", "--duration", "200ms"},
                  2, "--out"));
  return c;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
    text.replace(at, from.size(), to);
  }
  return text;
}

class Catalogue : public ::testing::TestWithParam<bad_input> {};

// One case run: the tool's result and what the checks need to know about its scratch files.
struct case_run {
  probe_result r;
  std::string file;  // what @FILE@, @DIR@ and @MARK@ stood for
  std::string folder;
  std::string mark;
  bool mark_created = false;
  std::string command;  // for the failure messages
};

std::string fill(const std::string& text, const case_run& run) {
  std::string out = replace_all(text, "@FILE@", run.file);
  out = replace_all(out, "@DIR@", run.folder);
  return replace_all(out, "@MARK@", run.mark);
}

case_run run_case(const bad_input& c) {
  case_run run;
  const backoff::test::test_scratch scratch("catalogue");
  const fs::path& dir = scratch.dir();
  fs::create_directories(dir / "folder");
  run.file = (dir / (c.file_name.empty() ? std::string("input") : c.file_name)).string();
  run.folder = (dir / "folder").string();
  run.mark = (dir / "mark").string();
  if (!c.file_name.empty()) {
    std::ofstream(run.file, std::ios::binary)
        .write(c.file_text.data(), static_cast<std::streamsize>(c.file_text.size()));
  }
  std::vector<std::string> args;
  for (const std::string& a : c.args) {
    args.push_back(fill(a, run));
    run.command += " " + backoff::test::shell_quote(args.back());
  }
  auto p = std::make_unique<process_probe>(args);
  // The catalogue's inputs are refused at once: 10 s is a hang (or a server that started).
  run.r = p->wait(10s);
  p.reset();
  run.mark_created = fs::exists(run.mark);
  return run;
}

TEST_P(Catalogue, OneLineTheDocumentedStatusNoCrash) {
  const bad_input& c = GetParam();
  // One process per case: ctest runs each case as its own test, in parallel with the others.
  const case_run run = run_case(c);
  const probe_result& r = run.r;
  SCOPED_TRACE("backoff" + run.command);
  EXPECT_TRUE(r.finished) << "still running after 10 s (killed); stderr: " << r.err;
  EXPECT_TRUE(r.exited) << "died of signal " << r.status - 128 << "; stderr: " << r.err;
  EXPECT_LT(r.status, 128) << r.err;
  EXPECT_EQ(r.status, c.status) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << r.err;
  EXPECT_TRUE(!r.err.empty() && r.err.back() == '\n') << "not one whole line: " << r.err;
  const std::string line = r.err.substr(0, r.err.find('\n'));
  EXPECT_NE(line.find(fill(c.expected, run)), std::string::npos)
      << "expected: " << fill(c.expected, run) << "\nstderr:   " << line;
  if (!c.also.empty()) {
    EXPECT_NE(line.find(fill(c.also, run)), std::string::npos)
        << "expected also: " << fill(c.also, run) << "\nstderr:   " << line;
  }
  if (!c.must_not.empty()) {
    EXPECT_EQ(line.find(fill(c.must_not, run)), std::string::npos)
        << "must not say: " << fill(c.must_not, run) << "\nstderr:   " << line;
  }
  if (c.stdout_empty) {
    EXPECT_EQ(r.out, "") << "partial output before the error";
  }
  EXPECT_FALSE(run.mark_created) << "the command ran";
}

INSTANTIATE_TEST_SUITE_P(BadInput, Catalogue, ::testing::ValuesIn(cli_cases()),
                         [](const auto& test) { return test.param.name; });

// ------------------------------------------------------------------------------------------------
// HTTP cases: raw bytes to `backoff serve`
// ------------------------------------------------------------------------------------------------

struct bad_request {
  std::string name;
  std::string bytes;
  int status = 0;
  std::string body;     // the whole body, one line without its newline
  bool closes = false;  // the server closes the connection after the answer
  std::string allow;    // the Allow header of a 405
};

void PrintTo(const bad_request& c, std::ostream* os) {
  *os << c.name;
}

bad_request http(std::string name, std::string bytes, int status, std::string body,
                 bool closes = true) {
  bad_request b;
  b.name = std::move(name);
  b.bytes = std::move(bytes);
  b.status = status;
  b.body = std::move(body);
  b.closes = closes;
  return b;
}

const std::string host = "Host: 127.0.0.1\r\n";

std::vector<bad_request> http_cases() {
  std::vector<bad_request> c;
  c.push_back(http("MalformedRequestLine", "GARBAGE\r\n\r\n", 400, "bad request: bad method"));
  c.push_back(http("BinaryGarbage", std::string("\x00\x01\x02\xff\r\n\r\n", 8), 400,
                   "bad request: bad method"));
  c.push_back(http("UnknownVersion", "GET /api HTTP/9.9\r\n" + host + "\r\n", 400,
                   "bad request: bad version"));
  c.push_back(http("MissingVersion", "GET /api\r\n\r\n", 400, "bad request: bad target"));
  c.push_back(
      http("EmptyTarget", "GET  HTTP/1.1\r\n" + host + "\r\n", 400, "bad request: bad target"));
  c.push_back(http("HeaderTooLarge",
                   "GET /api HTTP/1.1\r\n" + host + "X-Big: " + std::string(9000, 'a') + "\r\n\r\n",
                   400, "bad request: header limit exceeded"));
  c.push_back(http("HeaderWithoutColon", "GET /api HTTP/1.1\r\nBad Header\r\n\r\n", 400,
                   "bad request: bad field"));
  c.push_back(http("ContentLengthNotANumber",
                   "POST /admin/resume HTTP/1.1\r\n" + host + "Content-Length: abc\r\n\r\n", 400,
                   "bad request: bad Content-Length"));
  c.push_back(http("ContentLengthNegative",
                   "POST /admin/resume HTTP/1.1\r\n" + host + "Content-Length: -1\r\n\r\n", 400,
                   "bad request: bad Content-Length"));
  c.push_back(http(
      "ContentLengthOverflow",
      "POST /admin/resume HTTP/1.1\r\n" + host + "Content-Length: 99999999999999999999999\r\n\r\n",
      400, "bad request: bad Content-Length"));
  c.push_back(http(
      "ContentLengthTwice",
      "POST /admin/resume HTTP/1.1\r\n" + host + "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab",
      400, "bad request: multiple Content-Length"));
  c.push_back(http("BodyTooLarge",
                   "POST /admin/resume HTTP/1.1\r\n" + host + "Content-Length: 70000\r\n\r\n", 400,
                   "bad request: body limit exceeded"));
  c.push_back(http(
      "BadChunkSize",
      "POST /admin/resume HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\nZZ\r\n\r\n",
      400, "bad request: bad chunk"));
  {
    bad_request b = http("UnknownMethod", "BREW /metrics HTTP/1.1\r\n" + host + "\r\n", 405,
                         "method not allowed", false);
    b.allow = "GET, HEAD";
    c.push_back(b);
  }
  {
    bad_request b = http("GetOnAdminPause", "GET /admin/pause HTTP/1.1\r\n" + host + "\r\n", 405,
                         "method not allowed", false);
    b.allow = "POST";
    c.push_back(b);
  }
  c.push_back(
      http("UnknownPath", "GET /nope HTTP/1.1\r\n" + host + "\r\n", 404, "not found", false));
  c.push_back(http("PauseForNotADuration", "POST /admin/pause?for=xyz HTTP/1.1\r\n" + host + "\r\n",
                   400,
                   "bad ?for= duration: bad duration \"xyz\": expected a number at position 1, "
                   "found \"x\"",
                   false));
  c.push_back(
      http("PauseForNegative", "POST /admin/pause?for=-1s HTTP/1.1\r\n" + host + "\r\n", 400,
           "bad ?for= duration: bad duration \"-1s\": negative durations are not allowed", false));
  c.push_back(http("PauseForEmpty", "POST /admin/pause?for= HTTP/1.1\r\n" + host + "\r\n", 400,
                   "bad ?for= duration: bad duration \"\": empty (write e.g. 250ms, 1.5s or 1h30m)",
                   false));
  c.push_back(http("PauseForOverflow",
                   "POST /admin/pause?for=99999999999999999999h HTTP/1.1\r\n" + host + "\r\n", 400,
                   "bad ?for= duration: bad duration \"99999999999999999999h\": too large (the "
                   "limit is about 292 years)",
                   false));
  c.push_back(http("PauseForBareNumber", "POST /admin/pause?for=10 HTTP/1.1\r\n" + host + "\r\n",
                   400,
                   "bad ?for= duration: bad duration \"10\": missing unit after \"10\" (use "
                   "ns, us, ms, s, m, h or d)",
                   false));
  return c;
}

struct http_answer {
  bool complete = false;  // a whole response arrived
  int status = 0;
  std::string headers;
  std::string body;
  std::string raw;
  bool closed_after = false;  // the server closed the connection after it
};

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{};
  tv.tv_sec = 3;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `bytes` and reads one response (status line, headers, Content-Length body); a read
// that waits 3 s ends it incomplete.
http_answer exchange(int port, const std::string& bytes, bool expect_close) {
  http_answer a;
  const int fd = connect_to(port);
  if (fd < 0) return a;
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close early (a header over the limit): read its answer
    sent += static_cast<std::size_t>(n);
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  char chunk[4096];
  std::size_t header_end = std::string::npos;
  std::size_t length = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (header_end == std::string::npos) {
      header_end = a.raw.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        a.headers = a.raw.substr(0, header_end);
        // "HTTP/1.1 400 Bad Request": the code after the first space.
        if (a.headers.rfind("HTTP/1.", 0) == 0 && a.headers.size() > 12) {
          a.status = std::atoi(a.headers.c_str() + 9);
        }
        const std::string field = "\r\nContent-Length: ";  // as the server writes it
        const std::size_t at = a.headers.find(field);
        if (at != std::string::npos) {
          length = std::strtoul(a.headers.c_str() + at + field.size(), nullptr, 10);
        }
      }
    }
    if (header_end != std::string::npos && a.raw.size() >= header_end + 4 + length) {
      a.body = a.raw.substr(header_end + 4, length);
      a.complete = true;
      break;
    }
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    a.raw.append(chunk, static_cast<std::size_t>(n));
  }
  if (a.complete && expect_close) {
    // Only the close may follow: recv returns 0 (or a reset), not a 3 s time-out.
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    a.closed_after = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  ::close(fd);
  return a;
}

class CatalogueHttp : public ::testing::TestWithParam<bad_request> {
 public:
  static void SetUpTestSuite() {
    server_ = new process_probe({"serve", "--port", "0", "-q", "--base-delay", "0"});
    if (!backoff::test::wait_for_text(server_->err_path(), "POST /admin/resume)\n")) return;
    // "backoff serve: listening on http://127.0.0.1:PORT/api (...)"
    const std::string err = slurp(server_->err_path());
    const std::string before = "http://127.0.0.1:";
    const std::size_t at = err.find(before);
    if (at != std::string::npos) port_ = std::atoi(err.c_str() + at + before.size());
  }

  // The server still answers, then stops on TERM with status 0 and nothing unexpected said.
  static void TearDownTestSuite() {
    if (server_ == nullptr) return;
    if (port_ > 0) {
      const http_answer a =
          exchange(port_, "GET /api HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n", false);
      EXPECT_TRUE(a.complete) << "the server no longer answers after the bad requests: " << a.raw;
      EXPECT_EQ(a.status, 200) << a.raw;
    }
    server_->signal(SIGTERM);
    const probe_result r = server_->wait(10s);
    EXPECT_TRUE(r.finished && r.exited) << r.err;
    EXPECT_EQ(r.status, 0) << r.err;
    for (const char* bad : {"ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer",
                            "terminate called", "Segmentation"}) {
      EXPECT_EQ(r.err.find(bad), std::string::npos) << r.err;
    }
    delete server_;
    server_ = nullptr;
  }

 protected:
  static process_probe* server_;
  static int port_;
};

process_probe* CatalogueHttp::server_ = nullptr;
int CatalogueHttp::port_ = 0;

TEST_P(CatalogueHttp, StatusAndOneLineBody) {
  const bad_request& c = GetParam();
  ASSERT_GT(port_, 0) << "backoff serve did not start: " << slurp(server_->err_path());
  const http_answer a = exchange(port_, c.bytes, c.closes);
  ASSERT_TRUE(a.complete) << "no whole answer within the limit; got: " << a.raw;
  EXPECT_EQ(a.status, c.status) << a.raw;
  EXPECT_EQ(a.body, c.body + "\n") << a.raw;
  if (c.closes) {
    EXPECT_NE(a.headers.find("Connection: close"), std::string::npos) << a.headers;
    EXPECT_TRUE(a.closed_after) << "the connection stayed open after the 400";
  }
  if (!c.allow.empty()) {
    EXPECT_NE(a.headers.find("\r\nAllow: " + c.allow), std::string::npos) << a.headers;
  }
}

INSTANTIATE_TEST_SUITE_P(BadRequest, CatalogueHttp, ::testing::ValuesIn(http_cases()),
                         [](const auto& test) { return test.param.name; });

}  // namespace
