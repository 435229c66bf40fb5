// SPDX-License-Identifier: Apache-2.0
// `backoff serve` and `backoff load` as users run them: the seed's walkthrough (its single-dash
// flags included), the listening and report lines, graceful shutdown on SIGTERM, the output files,
// and one clear line with exit 2 for bad flags.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/resource.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "cli_runner.hpp"
#include "loopback_http.hpp"
#include "process_probe.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::test::cli_result;
using backoff::test::http_exchange;
using backoff::test::process_probe;
using backoff::test::run_cli;
using backoff::test::shell_quote;
using backoff::test::slurp;

// The port in "listening on http://HOST:PORT/api", or "" before that line.
std::string listening_port(const std::string& err) {
  std::smatch m;
  if (std::regex_search(err, m, std::regex("listening on http://[^ ]*:([0-9]+)/api"))) return m[1];
  return "";
}

std::string admin_pause(const std::string& port, const std::string& extra_fields = "") {
  return http_exchange(port, "POST /admin/pause?for=1ms HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                                 extra_fields + "Connection: close\r\n\r\n");
}

// `sh -c SCRIPT` as a child of the test, its stderr in a file: for `ulimit -n N && exec backoff
// ...`.
class shell_probe {
 public:
  explicit shell_probe(const std::string& script) : scratch_("net", "sh" + std::to_string(n_++)) {
    const std::string err = (scratch_ / "err").string();
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_addopen(&actions, 1, (scratch_ / "out").c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                       0644);
    std::string sh = "/bin/sh", c = "-c", text = script;
    char* argv[] = {sh.data(), c.data(), text.data(), nullptr};
    if (::posix_spawn(&pid_, "/bin/sh", &actions, nullptr, argv, environ) != 0) pid_ = -1;
    ::posix_spawn_file_actions_destroy(&actions);
  }
  shell_probe(const shell_probe&) = delete;
  shell_probe& operator=(const shell_probe&) = delete;
  ~shell_probe() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  std::filesystem::path err_path() const { return scratch_ / "err"; }
  std::string err() const { return slurp(err_path()); }
  std::string out() const { return slurp(scratch_ / "out"); }
  // The exit status, after SIGTERM if it is still running after `limit` (-1: it had to be killed).
  int stop_and_wait(std::chrono::milliseconds limit, int sig = SIGTERM) {
    ::kill(pid_, sig);
    return wait(limit);
  }
  int wait(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    int raw = 0;
    while (::waitpid(pid_, &raw, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > until) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &raw, 0);
        reaped_ = true;
        return -1;
      }
      std::this_thread::sleep_for(5ms);
    }
    reaped_ = true;
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  }

 private:
  static inline int n_ = 0;
  backoff::test::test_scratch scratch_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

std::string backoff_path() {
  return shell_quote(BACKOFF_CLI_PATH);
}

// Starts `backoff serve ARGS --port 0` and reads the port from its first line.
struct served {
  explicit served(std::vector<std::string> args) : probe(with_port(std::move(args))) {
    EXPECT_TRUE(backoff::test::wait_for_text(probe.err_path(), "POST /admin/resume)\n"));
    const std::string err = slurp(probe.err_path());
    port = listening_port(err);
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
  // The seed's once-a-second line, after the command's prefix like every line on stderr.
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("(^|\\n)backoff serve: [A-Z][a-z]{2} [0-9]{2} [0-9:]{8}\\.[0-9]{3}: "
                        "concurrency: +[0-9]+, last delay: ")))
      << r.err;
  std::istringstream serve_lines(r.err);
  for (std::string said; std::getline(serve_lines, said);) {
    EXPECT_EQ(said.rfind("backoff serve: ", 0), 0U) << said;
  }
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

// Faults by flag: the plan is printed at start, /api gets the injected status, /metrics counts it.
TEST(Serve, AFaultFlagIsPrintedInjectedAndCounted) {
  served server({"--errors", "100%:502", "--latency", "1ms", "-q"});
  EXPECT_NE(slurp(server.probe.err_path())
                .find("backoff serve: fault errors(status=502, rate=100%) from 0s\n"),
            std::string::npos);
  const std::string api = http_exchange(
      server.port, "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(api.rfind("HTTP/1.1 502 Bad Gateway\r\n", 0), 0u) << api;
  const std::string metrics = http_exchange(
      server.port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(metrics.find("backoff_faults_total{fault=\"errors\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("backoff_faults_total{fault=\"latency\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("backoff_requests_total{status=\"502\"} 1\n"), std::string::npos);
  server.probe.signal(SIGINT);
  EXPECT_EQ(server.probe.wait().status, 0);
}

// `serve` as a system's service, from flags or from a file's [service.NAME]: its port, once it
// says it listens.
std::string service_port(const process_probe& probe) {
  EXPECT_TRUE(backoff::test::wait_for_text(probe.err_path(), "GET /metrics)\n"));
  return listening_port(slurp(probe.err_path()));
}

// The lines of a tier's /metrics that its settings fix: its workers and admission limit.
std::string tier_settings(const std::string& port) {
  const std::string metrics =
      http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  std::string out;
  for (const char* name : {"\nbackoff_tier_workers ", "\nbackoff_tier_admission_limit "}) {
    const auto at = metrics.find(name);
    if (at != std::string::npos) out += metrics.substr(at + 1, metrics.find('\n', at + 1) - at);
  }
  return out;
}

TEST(Serve, AServiceFromFlagsServesAsTheSameServiceFromAFile) {
  const backoff::test::test_scratch scratch("serve");
  const auto file = scratch / "one.toml";
  std::ofstream(file) << "scenario = \"one\"\nmodel = \"system\"\n[service.api]\nworkers = 3\n"
                         "queue = 5\nlimit = \"concurrency(max=7)\"\nservice_time = \"1ms\"\n"
                         "[[clients]]\nto = \"api\"\narrivals = \"poisson(rate=5)\"\n"
                         "edge = \"front\"\n[edge.front]\nmax_attempts = 1\n"
                         "[[strategy]]\nname = \"as-is\"\n";
  process_probe from_flags({"serve", "--port", "0", "-q", "--workers", "3", "--queue", "5",
                            "--admission", "concurrency(max=7)", "--service-time", "1ms"});
  process_probe from_file(
      {"serve", "--port", "0", "-q", "--system", file.string(), "--service", "api"});
  const std::string flags_port = service_port(from_flags);
  const std::string file_port = service_port(from_file);
  const std::string settings = tier_settings(flags_port);
  EXPECT_EQ(settings, "backoff_tier_workers 3\nbackoff_tier_admission_limit 7\n");
  EXPECT_EQ(tier_settings(file_port), settings);
  for (const std::string& port : {flags_port, file_port}) {
    const std::string api =
        http_exchange(port, "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(api.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << api;
  }
  for (process_probe* p : {&from_flags, &from_file}) {
    p->signal(SIGTERM);
    EXPECT_EQ(p->wait().status, 0);
  }
}

// `load --experiment FILE`: an in-process server follows the schedule (every request fails for
// the first 0.6 s), the clients retry through it, and the outputs carry the fault window.
TEST(Load, AnExperimentFollowsAFaultSchedule) {
  const backoff::test::test_scratch scratch("load");
  const auto schedule = scratch / "faults.toml";
  std::ofstream(schedule) << "[[fault]]\nat = \"0s\"\nfor = \"600ms\"\n"
                             "fault = \"errors(rate=100%, status=503)\"\n";
  const auto out = scratch.sub("out");
  const cli_result load =
      run_cli({"load", "--experiment", schedule.string(), "--clients", "5", "--lambda", "20ms",
               "--policy", "constant(initial=50ms)", "--duration", "2s", "--report-every", "1s",
               "--out", out.string()});
  ASSERT_EQ(load.status, 0) << load.err;
  EXPECT_NE(load.err.find("backoff load: fault errors(status=503, rate=100%) from 0s to 600ms"),
            std::string::npos)
      << load.err;
  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["scenario"], "fault-experiment");
  const auto& s = summary["strategies"][0];
  // Each client's first attempts fell in the window and were retried; later ones succeeded.
  EXPECT_GT(s["completed"].get<int>(), 20);
  EXPECT_GT(s["attempts"].get<int>(), s["completed"].get<int>() + 5);
}

// A system run for real, stopped by SIGINT: its outputs are written and marked partial, the
// strategies not run are named, and it exits 130 with nothing left behind (every server and
// client is a thread of this one process). A second of a real system on real time: WallClock
// (plain build only; the sanitizers run the clients and tiers in tests/net).
TEST(LoadWallClock, ASystemStoppedBySigintWritesPartialOutputs) {
  const backoff::test::test_scratch scratch("load");
  const auto out = scratch / "out";
  backoff::test::process_probe load({"load", "--system", "twin-three-tier", "--set",
                                     "run.duration=\"60s\"", "--out", out.string()});
  ASSERT_TRUE(backoff::test::wait_for_text(load.out_path(), "retry-every-layer: 1 s:"));
  load.signal(SIGINT);
  const auto r = load.wait();
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_LT(r.elapsed_s, 20);
  EXPECT_NE(r.err.find("partial outputs written to"), std::string::npos) << r.err;
  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["partial"], true);
  ASSERT_EQ(summary["strategies"].size(), 1u);
  EXPECT_EQ(summary["strategies"][0]["name"], "retry-every-layer");
  EXPECT_GT(summary["strategies"][0]["operations"].get<int>(), 500);
  EXPECT_EQ(slurp(out / "services.csv").rfind("strategy,service,", 0), 0u);
}

// Open loop: a rate with its unit, a ramp, the summary's late and dropped sends and p99.99, the
// closing latency line, and an HdrHistogram log that holds every completed operation.
TEST(Load, AnOpenLoopRampWritesItsCountsAndAHistogramLog) {
  served server({"--base-delay", "1ms", "-q"});
  const backoff::test::test_scratch scratch("load");
  const auto& dir = scratch.dir();
  const auto log = dir / "latency.hlog";
  const cli_result load =
      run_cli({"load", "--url", server.url(), "--ramp", "0s:50/s,1500ms:250/s", "--arrival",
               "constant", "--out", dir.string(), "--histogram-log", log.string()});
  ASSERT_EQ(load.status, 0) << load.err;
  const auto s = nlohmann::json::parse(slurp(dir / "summary.json"))["strategies"][0];
  // The ramp lasts 1.5 s and its integral is 225 sends, the first at 0.
  EXPECT_EQ(s["operations"].get<int>() + s["dropped_sends"].get<int>(), 225) << s;
  EXPECT_EQ(s["dropped_sends"], 0);
  EXPECT_TRUE(s["late_sends"].is_number());
  EXPECT_TRUE(s["latency_s"]["p9999"].is_number());
  EXPECT_GE(s["latency_s"]["p9999"].get<double>(), s["latency_s"]["p999"].get<double>());
  EXPECT_NE(load.err.find("backoff load: latency from the intended send time over "),
            std::string::npos)
      << load.err;
  const std::string text = slurp(log);
  EXPECT_EQ(text.rfind("#[Histogram log format version 1.3]\n", 0), 0u) << text;
  // Two intervals, [0, 1) and [1, 1.5), after the header.
  EXPECT_NE(text.find("\"Interval_Compressed_Histogram\"\n0.000,1.000,"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\n1.000,0.5"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 7) << text;
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

// --- serve: the port, connections, admin --------------------------------------------------------

// A second `serve` on the same port used to start, and take half of the first one's connections.
TEST(Serve, ASecondServeOnAUsedPortExitsWithOneLineNamingTheAddress) {
  served first({"-q"});
  process_probe second({"serve", "--port", first.port, "-q"});
  const auto r = second.wait(10s);
  EXPECT_TRUE(r.finished) << "the second server is running on a used port";
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err, "backoff serve: cannot listen on 127.0.0.1:" + first.port +
                       ": Address already in use\n");
  first.probe.signal(SIGTERM);
  EXPECT_EQ(first.probe.wait().status, 0);
}

TEST(Serve, ReusePortLetsTwoServersThatAskForItShareThePort) {
  served first({"-q", "--reuse-port"});
  process_probe second({"serve", "--port", first.port, "-q", "--reuse-port"});
  EXPECT_TRUE(backoff::test::wait_for_text(second.err_path(), "POST /admin/resume)\n"))
      << slurp(second.err_path());
  second.signal(SIGTERM);
  EXPECT_EQ(second.wait().status, 0);
  first.probe.signal(SIGTERM);
  EXPECT_EQ(first.probe.wait().status, 0);
}

// Raises this process's soft descriptor limit to `n` when the hard one allows (the test opens
// more connections than the server it starts may hold); false when it cannot.
bool raise_descriptors_to(rlim_t n) {
  rlimit mine{};
  ::getrlimit(RLIMIT_NOFILE, &mine);
  if (mine.rlim_cur < n && mine.rlim_max >= n) {
    mine.rlim_cur = n;
    ::setrlimit(RLIMIT_NOFILE, &mine);
  }
  return mine.rlim_cur >= n;
}

// The case: 300 idle connections against a server under `ulimit -n 256` ran it out of
// descriptors, and /api no longer answered. Now it holds at most the limit minus a reserve, and a
// new connection takes the place of the oldest idle one.
TEST(Serve, IdleConnectionsPastTheDescriptorLimitLeaveApiReachable) {
  if (!raise_descriptors_to(400)) GTEST_SKIP() << "the test needs 400 descriptors";
  shell_probe server("ulimit -n 256 && exec " + backoff_path() +
                     " serve --port 0 -q --base-delay 0 --threads 1");
  ASSERT_TRUE(backoff::test::wait_for_text(server.err_path(), "POST /admin/resume)\n"))
      << server.err();
  const std::string port = listening_port(server.err());
  // 256 - (64 + 4 per thread): the default is said at start.
  EXPECT_NE(server.err().find("at most 188 connections"), std::string::npos) << server.err();
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    const int fd = backoff::test::connect_to_loopback(port);
    if (fd >= 0) idle.push_back(fd);
  }
  EXPECT_EQ(idle.size(), 300u);
  const std::string answer =
      http_exchange(port, "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  const std::string metrics =
      http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(metrics.find("backoff_closed_connections_total{reason=\"evicted\"} "),
            std::string::npos)
      << metrics;
  for (const int fd : idle) ::close(fd);
  EXPECT_EQ(server.stop_and_wait(10s), 0) << server.err();
}

// Issue 39: connections that each sent one byte of a request held the server until the header
// timeout. Here the cap is above what the descriptors allow, so accept itself fails (EMFILE):
// the connection that waited longest on its client makes room all the same.
TEST(Serve, HalfSentConnectionsPastTheDescriptorLimitLeaveApiReachable) {
  if (!raise_descriptors_to(400)) GTEST_SKIP() << "the test needs 400 descriptors";
  shell_probe server("ulimit -n 256 && exec " + backoff_path() +
                     " serve --port 0 -q --base-delay 0 --threads 1 --max-connections 1000");
  ASSERT_TRUE(backoff::test::wait_for_text(server.err_path(), "POST /admin/resume)\n"))
      << server.err();
  const std::string port = listening_port(server.err());
  // One answer first. Under UBSan this is needed, not a courtesy: its check of a dynamic type
  // asks whether memory is readable through a pipe(), which fails with EMFILE once the server
  // holds every descriptor, and it then reports the type as wrong ("invalid vptr", the
  // ostringstream that serializes the answer). Checked once, the type is cached.
  const std::string first =
      http_exchange(port, "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(first.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << first;
  std::vector<int> half_sent;
  for (int i = 0; i < 300; ++i) {
    const int fd = backoff::test::connect_to_loopback(port);
    if (fd < 0) continue;
    (void)!::send(fd, "G", 1, MSG_NOSIGNAL);
    half_sent.push_back(fd);
  }
  EXPECT_EQ(half_sent.size(), 300u);
  const std::string answer =
      http_exchange(port, "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  for (const int fd : half_sent) ::close(fd);
  EXPECT_EQ(server.stop_and_wait(10s), 0) << server.err();
}

// The same for the proxy, whose cap is half of what the descriptors allow (each client connection
// holds two): at the cap, the connection that waited longest on its client makes room.
TEST(Proxy, HalfSentConnectionsAtTheCapLeaveTheProxyReachable) {
  served upstream({"-q", "--base-delay", "0"});
  shell_probe proxy("ulimit -n 256 && exec " + backoff_path() +
                    " proxy --listen 127.0.0.1:0 --upstream 127.0.0.1:" + upstream.port);
  ASSERT_TRUE(backoff::test::wait_for_text(proxy.err_path(), "(GET /metrics)\n")) << proxy.err();
  std::smatch m;
  const std::string err = proxy.err();
  ASSERT_TRUE(std::regex_search(err, m, std::regex("listening on http://127\\.0\\.0\\.1:([0-9]+)")))
      << err;
  const std::string port = m[1];
  std::vector<int> half_sent;
  for (int i = 0; i < 150; ++i) {  // past the cap of (256 - 68) / 2 = 94
    const int fd = backoff::test::connect_to_loopback(port);
    if (fd < 0) continue;
    (void)!::send(fd, "G", 1, MSG_NOSIGNAL);
    half_sent.push_back(fd);
  }
  EXPECT_EQ(half_sent.size(), 150u);
  const std::string api =
      http_exchange(port, "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(api.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << api;
  const std::string metrics =
      http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(
      std::regex_search(metrics, std::regex("backoff_proxy_evicted_connections_total [1-9]")))
      << metrics;
  for (const int fd : half_sent) ::close(fd);
  EXPECT_EQ(proxy.stop_and_wait(10s), 0) << proxy.err();
}

TEST(Serve, AMaxConnectionsPastTheDescriptorLimitIsWarnedAbout) {
  shell_probe server("ulimit -n 256 && exec " + backoff_path() +
                     " serve --port 0 -q --threads 1 --max-connections 1000");
  ASSERT_TRUE(backoff::test::wait_for_text(server.err_path(), "POST /admin/resume)\n"))
      << server.err();
  EXPECT_NE(server.err().find("backoff serve: warning: --max-connections 1000 is more than the "
                              "descriptor limit leaves room for (188; ulimit -n)"),
            std::string::npos)
      << server.err();
  EXPECT_EQ(server.stop_and_wait(10s), 0) << server.err();
}

TEST(Serve, AnAdminTokenFileGuardsTheAdminEndpoints) {
  const backoff::test::test_scratch scratch("net");
  std::ofstream(scratch / "token") << "s3cret\n";  // the line break is not part of the token
  served server({"-q", "--admin-token-file", (scratch / "token").string()});
  EXPECT_EQ(admin_pause(server.port).rfind("HTTP/1.1 401 ", 0), 0u);
  EXPECT_EQ(admin_pause(server.port, "Authorization: Bearer wrong\r\n").rfind("HTTP/1.1 401 ", 0),
            0u);
  EXPECT_EQ(admin_pause(server.port, "Authorization: Bearer s3cret\r\n").rfind("HTTP/1.1 200 ", 0),
            0u);
  server.probe.signal(SIGTERM);
  EXPECT_EQ(server.probe.wait().status, 0);
}

TEST(Serve, AdminFromAnotherSiteIsForbidden) {
  served server({"-q"});
  EXPECT_EQ(http_exchange(server.port,
                          "POST /admin/pause HTTP/1.1\r\nHost: evil.example.com\r\n"
                          "Connection: close\r\n\r\n")
                .rfind("HTTP/1.1 403 ", 0),
            0u);
  EXPECT_EQ(
      admin_pause(server.port, "Origin: http://evil.example.com\r\n").rfind("HTTP/1.1 403 ", 0),
      0u);
  EXPECT_EQ(admin_pause(server.port).rfind("HTTP/1.1 200 ", 0), 0u);
  server.probe.signal(SIGTERM);
  EXPECT_EQ(server.probe.wait().status, 0);
}

TEST(Serve, ListeningBeyondLoopbackWarnsAndTurnsAdminOffWithoutAToken) {
  process_probe server({"serve", "--host", "0.0.0.0", "--port", "0", "-q"});
  ASSERT_TRUE(backoff::test::wait_for_text(server.err_path(), "POST /admin/resume)\n"))
      << slurp(server.err_path());
  const std::string err = slurp(server.err_path());
  EXPECT_NE(err.find("backoff serve: warning: listening on 0.0.0.0, not loopback, without "
                     "--admin-token: /admin/* answers 403"),
            std::string::npos)
      << err;
  const std::string answer = admin_pause(listening_port(err));
  EXPECT_EQ(answer.rfind("HTTP/1.1 403 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("without --admin-token"), std::string::npos) << answer;
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait().status, 0);
}

TEST(Serve, AnEmptyOrUnreadableTokenFileIsOneLineWithStatus2) {
  const backoff::test::test_scratch scratch("net");
  std::ofstream(scratch / "empty") << "\n";
  for (const auto& [path, says] :
       {std::pair{(scratch / "empty").string(), std::string("the token is empty")},
        std::pair{scratch.dir().string(), std::string("cannot read")},
        std::pair{(scratch / "missing").string(), std::string("No such file or directory")}}) {
    const cli_result r = run_cli({"serve", "--port", "0", "--admin-token-file", path});
    EXPECT_EQ(r.status, 2) << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("backoff serve: --admin-token-file"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
}

// --- load: this machine's errors are not the server's --------------------------------------------

// Under `ulimit -n 32`, most of 60 clients cannot open a socket: EMFILE was counted as the
// server's errors. Now they are local errors, said once.
TEST(LoadExhausted, RunningOutOfDescriptorsIsALocalErrorNotTheServers) {
  served server({"--base-delay", "5ms", "-q"});
  shell_probe load("ulimit -n 32 && exec " + backoff_path() + " load --url " + server.url() +
                   " --clients 60 --lambda 20ms --duration 1s --report-every 500ms");
  EXPECT_EQ(load.wait(30s), 0) << load.err();
  const std::string err = load.err();
  const std::string warning = "backoff load: warning: Too many open files on this machine";
  const std::size_t at = err.find(warning);
  EXPECT_NE(at, std::string::npos) << err;
  EXPECT_EQ(err.find(warning, at + 1), std::string::npos) << "said more than once: " << err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m,
                                std::regex(" ([0-9]+) OK, ([0-9]+) errors, [0-9]+ timed out, "
                                           "([0-9]+) local errors \\(never sent\\)")))
      << err;
  EXPECT_GT(std::stoi(m[1]), 0) << err;  // the clients that had a socket were served
  EXPECT_EQ(m[2], "0") << err;
  EXPECT_GT(std::stoi(m[3]), 0) << err;
  EXPECT_NE(load.out().find("errors: 0.00 req/sec"), std::string::npos) << load.out();
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
    {"ServeHeaderTimeoutZero", {"serve", "--header-timeout", "0"}, "--header-timeout"},
    {"ServeIdleTimeoutNotADuration", {"serve", "--idle-timeout", "soon"}, "--idle-timeout"},
    {"ServeAdminTokenEmpty", {"serve", "--admin-token", ""}, "--admin-token: the token is empty"},
    {"ServeAdminTokenWithASpace", {"serve", "--admin-token", "a b"}, "visible ASCII"},
    {"ServeAdminTokenTwice",
     {"serve", "--admin-token", "x", "--admin-token-file", "/dev/null"},
     "not both"},
    {"ServeAdminTokenFileMissing",
     {"serve", "--admin-token-file", "/nonexistent/token"},
     "cannot read \"/nonexistent/token\""},
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
