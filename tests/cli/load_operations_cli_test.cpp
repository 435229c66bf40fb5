// SPDX-License-Identifier: Apache-2.0
// `backoff load` as users run it says operations and requests apart: each seed line on stdout is
// followed by a line of the interval's operations and requests, and the closing lines on stderr
// give the requests (as before) and the operations, with the same counts as summary.json, whose
// fields keep their names.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "process_probe.hpp"

namespace {

using backoff::test::cli_result;
using backoff::test::process_probe;
using backoff::test::run_cli;
using backoff::test::slurp;

// `backoff serve ARGS --port 0 -q` and its port, read from its listening line.
struct load_ops_server {
  explicit load_ops_server(std::vector<std::string> args) : probe(serve_args(std::move(args))) {
    EXPECT_TRUE(backoff::test::wait_for_text(probe.err_path(), "POST /admin/resume)\n"));
    std::smatch m;
    const std::string err = slurp(probe.err_path());
    if (std::regex_search(err, m, std::regex("listening on http://[^ ]*:([0-9]+)/api"))) {
      port = m[1];
    }
    EXPECT_FALSE(port.empty()) << err;
  }
  static std::vector<std::string> serve_args(std::vector<std::string> args) {
    args.insert(args.begin(), "serve");
    args.insert(args.end(), {"--port", "0", "-q"});
    return args;
  }
  std::string url() const { return "http://127.0.0.1:" + port + "/api"; }
  process_probe probe;
  std::string port;
};

std::uint64_t load_ops_number(const std::smatch& m, std::size_t i) {
  return std::stoull(m[i].str());
}

std::size_t load_ops_occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// What the pairs of lines on stdout add up to: the seed's line, then the operations'.
struct load_ops_interval_sums {
  std::size_t pairs = 0;
  std::uint64_t ok = 0, requests = 0;
};

load_ops_interval_sums load_ops_interval_lines(const std::string& out) {
  const std::regex pair(
      "OK: [0-9]+\\.[0-9]{2} req/sec, errors: [0-9]+\\.[0-9]{2} req/sec, timedout: "
      "[0-9]+\\.[0-9]{2} req/sec\n"
      "operations: ([0-9]+) started, ([0-9]+) succeeded, ([0-9]+) failed, [0-9]+ in flight "
      "\\(([0-9]+\\.[0-9]{2}%|-) of those ended succeeded\\); requests: ([0-9]+) sent, "
      "([0-9]+\\.[0-9]{2}|-) per operation started: ([0-9]+) OK, ([0-9]+) errors, ([0-9]+) timed "
      "out\n");
  load_ops_interval_sums sums;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), pair); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    ++sums.pairs;
    EXPECT_EQ(load_ops_number(m, 7), load_ops_number(m, 2)) << m.str();  // a 200 ends its operation
    sums.ok += load_ops_number(m, 7);
    sums.requests += load_ops_number(m, 5);
  }
  return sums;
}

// The names summary.json's strategy had before are all still there, with their meanings.
void load_ops_expect_earlier_fields(const nlohmann::json& s) {
  for (const char* name :
       {"name",           "operations",   "completed",     "failed",
        "gave_up",        "unfinished",   "attempts",      "attempts_per_operation",
        "success_rate",   "load",         "makespan_s",    "latency_s",
        "goodput_per_s",  "recovery_s",   "peak_load",     "mean_load",
        "events",         "late_sends",   "dropped_sends", "local_errors",
        "fell_back_rate", "answered_rate"}) {
    EXPECT_TRUE(s.contains(name)) << name;
  }
  EXPECT_EQ(s["failed"].get<std::uint64_t>(),
            s["operations"].get<std::uint64_t>() - s["completed"].get<std::uint64_t>());
}

TEST(LoadOperationsCli, TheLinesSayOperationsAndRequestsAsSummaryJsonDoes) {
  load_ops_server server({"--errors", "50%:500", "--base-delay", "1ms"});
  const backoff::test::test_scratch scratch("load-ops");
  const auto dir = scratch.sub("out");
  const std::vector<std::string> args = {"load",
                                         "--url",
                                         server.url(),
                                         "--clients",
                                         "4",
                                         "--lambda",
                                         "5ms",
                                         "--timeout",
                                         "1s",
                                         "--max-attempts",
                                         "3",
                                         "--policy",
                                         "constant(initial=1ms)",
                                         "--fallback",
                                         "fallback()",
                                         "--duration",
                                         "900ms",
                                         "--report-every",
                                         "400ms",
                                         "--out",
                                         dir.string()};
  const cli_result load = run_cli(args);
  ASSERT_EQ(load.status, 0) << load.err;

  // stdout: the seed's line as before, each followed by the interval's operations and requests.
  const std::size_t seed_lines = load_ops_occurrences(load.out, "OK: ");
  EXPECT_GE(seed_lines, 2u) << load.out;
  EXPECT_EQ(load_ops_occurrences(load.out, "\noperations: "), seed_lines) << load.out;
  const load_ops_interval_sums lines = load_ops_interval_lines(load.out);
  EXPECT_EQ(lines.pairs, seed_lines) << load.out;

  // stderr: the requests' line as before, then the operations'.
  std::smatch requests;
  ASSERT_TRUE(std::regex_search(
      load.err, requests,
      std::regex("backoff load: ([0-9]+) requests in [0-9.e+-]+ s: ([0-9]+) OK, ([0-9]+) errors, "
                 "([0-9]+) timed out\n")))
      << load.err;
  std::smatch operations;
  ASSERT_TRUE(std::regex_search(
      load.err, operations,
      std::regex("\nbackoff load: ([0-9]+) operations: ([0-9]+) succeeded "
                 "\\(([0-9]+\\.[0-9]{2})%\\), ([0-9]+) failed \\(gave up\\), ([0-9]+) unfinished; "
                 "([0-9]+\\.[0-9]{2}) requests per operation; the fallback answered ([0-9]+) of "
                 "the ([0-9]+) failed \\(([0-9]+\\.[0-9]{2})% answered\\)\n")))
      << load.err;
  // The requests' line comes first and the latency line stays last.
  EXPECT_LT(requests.position(0), operations.position(0));
  EXPECT_NE(load.err.find("backoff load: latency over "), std::string::npos) << load.err;
  EXPECT_GT(load.err.find("backoff load: latency over "),
            static_cast<std::size_t>(operations.position(0)));
  EXPECT_LE(lines.ok, load_ops_number(requests, 2));
  EXPECT_LE(lines.requests, load_ops_number(requests, 1));

  const auto summary = nlohmann::json::parse(slurp(dir / "summary.json"));
  const auto& s = summary["strategies"][0];
  // The requests: total, OK, errors, timed out.
  EXPECT_EQ(s["attempts"], load_ops_number(requests, 1));
  EXPECT_EQ(s["events"], load_ops_number(requests, 1));
  EXPECT_EQ(s["requests_ok"], load_ops_number(requests, 2));
  EXPECT_EQ(s["requests_errors"], load_ops_number(requests, 3));
  EXPECT_EQ(s["requests_timeouts"], load_ops_number(requests, 4));
  EXPECT_EQ(s["requests_ok"].get<std::uint64_t>() + s["requests_errors"].get<std::uint64_t>() +
                s["requests_timeouts"].get<std::uint64_t>() +
                s["requests_cancelled"].get<std::uint64_t>() +
                s["requests_unanswered"].get<std::uint64_t>() +
                s["local_errors"].get<std::uint64_t>(),
            s["attempts"].get<std::uint64_t>());
  // The operations, and the ratios as the lines round them.
  EXPECT_EQ(s["operations"], load_ops_number(operations, 1));
  EXPECT_EQ(s["completed"], load_ops_number(operations, 2));
  EXPECT_EQ(s["gave_up"], load_ops_number(operations, 4));
  EXPECT_EQ(s["unfinished"], load_ops_number(operations, 5));
  EXPECT_EQ(s["operations"].get<std::uint64_t>(), s["completed"].get<std::uint64_t>() +
                                                      s["gave_up"].get<std::uint64_t>() +
                                                      s["unfinished"].get<std::uint64_t>());
  EXPECT_GT(s["completed"].get<std::uint64_t>(), 0u);
  EXPECT_GT(s["gave_up"].get<std::uint64_t>(), 0u);
  EXPECT_NEAR(std::stod(operations[3].str()), 100 * s["success_rate"].get<double>(), 0.0051);
  EXPECT_NEAR(std::stod(operations[6].str()), s["load"].get<double>(), 0.0051);
  EXPECT_NEAR(std::stod(operations[9].str()), 100 * s["answered_rate"].get<double>(), 0.0051);
  // fallback(): every failure is answered.
  EXPECT_EQ(load_ops_number(operations, 7), load_ops_number(operations, 4));
  EXPECT_EQ(load_ops_number(operations, 8), load_ops_number(operations, 4));
  EXPECT_DOUBLE_EQ(
      s["fell_back_rate"].get<double>(),
      static_cast<double>(load_ops_number(operations, 7)) / s["operations"].get<double>());

  load_ops_expect_earlier_fields(s);
  server.probe.signal(SIGTERM);
  EXPECT_EQ(server.probe.wait().status, 0);
}

}  // namespace
