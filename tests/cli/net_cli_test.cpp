// `backoff serve` and `backoff load` as users run them: the seed's walkthrough (its single-dash
// flags included), the listening and report lines, graceful shutdown on SIGTERM, the output files,
// and one clear line with exit 2 for bad flags.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "cli_runner.hpp"
#include "process_probe.hpp"

namespace {

using backoff::test::cli_result;
using backoff::test::process_probe;
using backoff::test::run_cli;
using backoff::test::slurp;

// Starts `backoff serve ARGS --port 0` and reads the port from its first line.
struct served {
  explicit served(std::vector<std::string> args) : probe(with_port(std::move(args))) {
    EXPECT_TRUE(backoff::test::wait_for_text(probe.err_path(), "POST /admin/resume)\n"));
    const std::string err = slurp(probe.err_path());
    std::smatch m;
    if (std::regex_search(err, m, std::regex("127\\.0\\.0\\.1:([0-9]+)/api"))) port = m[1];
    EXPECT_FALSE(port.empty()) << err;
  }
  static std::vector<std::string> with_port(std::vector<std::string> args) {
    args.insert(args.begin(), "serve");
    args.insert(args.end(), {"--port", "0"});
    return args;
  }
  std::string url() const { return "http://127.0.0.1:" + port + "/api"; }
  process_probe probe;
  std::string port;
};

TEST(Serve, TheSeedsWalkthroughWorksWithItsOwnFlags) {
  // server.go's flags, then client.go's: one dash, camelCase.
  served server({"-limit", "30", "-factor", "1.05", "-baseDelay", "20ms"});
  const cli_result load =
      run_cli({"load", "--url", server.url(), "-clients", "20", "-lambda", "0.05", "-timeout", "2s",
               "-exponential-backoff", "-simple-backoff-delay", "100ms", "--duration", "1500ms",
               "--report-every", "500ms"});
  EXPECT_EQ(load.status, 0) << load.err;
  // The seed's client takes both flags and ignores the delay: so does ours, and says so.
  EXPECT_NE(load.err.find("--simple-backoff-delay is ignored with --exponential-backoff"),
            std::string::npos)
      << load.err;
  const std::regex line(
      "OK: [0-9]+\\.[0-9]{2} req/sec, errors: [0-9]+\\.[0-9]{2} req/sec, "
      "timedout: [0-9]+\\.[0-9]{2} req/sec");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(load.out, m, line)) << load.out;
  EXPECT_EQ(load.out.find("OK: 0.00"), std::string::npos) << "requests were answered: " << load.out;
  server.probe.signal(SIGTERM);
  const auto r = server.probe.wait();
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("shutting down"), std::string::npos);
  // The seed's once-a-second line.
  EXPECT_TRUE(std::regex_search(r.err, std::regex("[A-Z][a-z]{2} [0-9]{2} [0-9:]{8}\\.[0-9]{3}: "
                                                  "concurrency: +[0-9]+, last delay: ")))
      << r.err;
}

TEST(Load, WritesTheSimulatorsSummaryAndTimeSeries) {
  served server({"--base-delay", "5ms", "-q"});
  const backoff::test::test_scratch scratch("load");
  const auto& dir = scratch.dir();
  const cli_result load =
      run_cli({"load", "--url", server.url(), "--clients", "10", "--lambda", "20ms", "--duration",
               "1s", "--out", dir.string(), "--name", "mine"});
  ASSERT_EQ(load.status, 0) << load.err;
  const auto summary = nlohmann::json::parse(slurp(dir / "summary.json"));
  ASSERT_EQ(summary["strategies"].size(), 1u);
  EXPECT_EQ(summary["strategies"][0]["name"], "mine");
  EXPECT_GT(summary["strategies"][0]["completed"].get<int>(), 50);
  EXPECT_EQ(slurp(dir / "timeseries.csv").rfind("strategy,t_s,", 0), 0u);
  server.probe.signal(SIGINT);
  EXPECT_EQ(server.probe.wait().status, 0);
}

TEST(Load, ATimeoutIsCountedAndRetried) {
  served server({"--base-delay", "10s", "-q"});  // slower than the client waits
  const backoff::test::test_scratch scratch("load");
  const auto& dir = scratch.dir();
  const cli_result load = run_cli({"load", "--url", server.url(), "--clients", "2", "--lambda",
                                   "10ms", "--timeout", "100ms", "--duration", "800ms", "--out",
                                   dir.string(), "--policy", "constant(initial=10ms)"});
  ASSERT_EQ(load.status, 0) << load.err;
  const auto s = nlohmann::json::parse(slurp(dir / "summary.json"))["strategies"][0];
  EXPECT_EQ(s["completed"], 0);
  EXPECT_GE(s["attempts"].get<int>(), 6);  // two clients, a retry every ~110 ms
  server.probe.signal(SIGTERM);
  EXPECT_EQ(server.probe.wait().status, 0);
}

TEST(Load, AnAimdWindowAndARetryBudgetPaceTheClients) {
  served server(
      {"--base-delay", "5ms", "--tick", "1ms", "-q", "--max-busy", "3", "--retry-after", "0"});
  const backoff::test::test_scratch scratch("load");
  const auto& dir = scratch.dir();
  const cli_result load =
      run_cli({"load", "--url", server.url(), "--clients", "20", "--lambda", "5ms", "--duration",
               "1s", "--policy", "constant(initial=1ms)", "--aimd", "aimd(decrease=0.5)",
               "--budget", "token-bucket(max=10, ratio=0.1)", "--out", dir.string()});
  ASSERT_EQ(load.status, 0) << load.err;
  const auto s = nlohmann::json::parse(slurp(dir / "summary.json"))["strategies"][0];
  EXPECT_GT(s["completed"].get<int>(), 100);
  // 20 clients against room for 3: without the window most attempts would be rejected; the
  // window keeps the clients near what the server takes, and the budget caps the retries.
  EXPECT_LT(s["attempts_per_operation"].get<double>(), 2.0) << s.dump();
  server.probe.signal(SIGTERM);
  EXPECT_EQ(server.probe.wait().status, 0);
}

TEST(Load, ANameThatIsNotUtf8IsKeptAsReplacementCharactersAndTheRunIsNotLost) {
  served server({"--base-delay", "5ms", "-q"});
  const backoff::test::test_scratch scratch("load");
  const auto& dir = scratch.dir();
  const cli_result load =
      run_cli({"load", "--url", server.url(), "--clients", "5", "--lambda", "20ms", "--duration",
               "500ms", "--out", dir.string(), "--name", "caf\xe9"});
  ASSERT_EQ(load.status, 0) << load.err;
  const auto summary = nlohmann::json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(summary["strategies"][0]["name"], "caf\xef\xbf\xbd");  // U+FFFD
  EXPECT_GT(summary["strategies"][0]["completed"].get<int>(), 0);
  // CSV is bytes: it keeps the name as given (docs/SIMULATOR.md, "Outputs").
  EXPECT_NE(slurp(dir / "timeseries.csv").find("\ncaf\xe9,"), std::string::npos);
  server.probe.signal(SIGTERM);
  EXPECT_EQ(server.probe.wait().status, 0);
}

TEST(Load, ReportLinesKeepTheirPeriodAndTheLastPartialWindowIsPrinted) {
  served server({"--base-delay", "5ms", "-q"});
  // 1.25 s at one line per 500 ms: lines at 0.5 s and 1 s, then the partial 0.25 s window.
  const cli_result load = run_cli({"load", "--url", server.url(), "--clients", "5", "--lambda",
                                   "20ms", "--duration", "1250ms", "--report-every", "500ms"});
  ASSERT_EQ(load.status, 0) << load.err;
  std::size_t lines = 0;
  for (std::size_t at = load.out.find("OK: "); at != std::string::npos;
       at = load.out.find("OK: ", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 3u) << load.out;
  server.probe.signal(SIGTERM);
  EXPECT_EQ(server.probe.wait().status, 0);
}

struct bad_flag_case {
  const char* name;
  std::vector<std::string> args;
  const char* mentions;
};

class BadNetFlags : public ::testing::TestWithParam<bad_flag_case> {};

TEST_P(BadNetFlags, AreOneLineWithStatus2) {
  const cli_result r = run_cli(GetParam().args);
  EXPECT_EQ(r.status, 2) << r.err;
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find(GetParam().mentions), std::string::npos) << r.err;
}

const bad_flag_case bad_flags[] = {
    {"ServePortTooLarge", {"serve", "--port", "70000"}, "--port"},
    {"ServeBadBaseDelay", {"serve", "-baseDelay", "fast"}, "--base-delay"},
    {"ServeZeroTick", {"serve", "--tick", "0"}, "--tick"},
    {"ServeRejectStatus", {"serve", "--reject-status", "500"}, "reject-status"},
    {"ServeFactorBelowOne", {"serve", "--factor", "0.5"}, "--factor"},
    {"LoadHttps", {"load", "--url", "https://127.0.0.1/api"}, "https"},
    {"LoadBadPort", {"load", "--url", "http://127.0.0.1:99999/api"}, "port"},
    {"LoadZeroClients", {"load", "--clients", "0"}, "--clients"},
    {"LoadBadLambda", {"load", "-lambda", "soon"}, "soon"},
    {"LoadTwoPolicies", {"load", "--policy", "grpc", "-exponential-backoff"}, "one of"},
    {"LoadBadPolicy", {"load", "--policy", "expo(factor=2)"}, "expo"},
    {"LoadBadExperiment", {"load", "--experiment", "meltdown"}, "outage"},
    {"LoadPauseAfterTheEnd",
     {"load", "--experiment", "outage", "--pause-after", "50s", "--duration", "30s"},
     "--duration"},
};

INSTANTIATE_TEST_SUITE_P(Net, BadNetFlags, ::testing::ValuesIn(bad_flags),
                         [](const auto& test) { return std::string(test.param.name); });

}  // namespace
