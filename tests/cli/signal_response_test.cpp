// SPDX-License-Identifier: Apache-2.0
// Every long phase of the tool answers SIGTERM (and SIGINT) promptly: reading a scenario, checking
// a large sweep, running it, printing delays, a script between attempts, forall with many items.
// Each case puts the tool in its phase, signals it, and asserts that it is gone within a generous
// bound (seconds: the bound holds under TSan); the measured time is printed as
// `[response] PHASE: S s` (docs/RELIABILITY.md lists the figures).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "process_probe.hpp"
#include "scratch.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::test::catches;
using backoff::test::cpu_ticks;
using backoff::test::probe_result;
using backoff::test::process_probe;
using namespace std::chrono_literals;

constexpr double bound_s = 5.0;

// Waits (bounded) until `ready` holds; with `handler`, first until `p` handles SIGTERM (sim and
// sweep install theirs once their arguments are read).
template <typename Ready>
bool wait_until(const process_probe& p, bool handler, Ready ready) {
  for (int i = 0; handler && i < 4000 && !catches(p.pid(), SIGTERM); ++i) {
    std::this_thread::sleep_for(2ms);
  }
  if (handler && !catches(p.pid(), SIGTERM)) return false;
  for (int i = 0; i < 4000; ++i) {
    if (ready()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// Signals `p` and waits for it: the result, and the seconds from the signal to its end (timed
// apart from reading its outputs).
std::pair<probe_result, double> signal_and_time(process_probe& p, int sig, const char* phase) {
  const auto sent = std::chrono::steady_clock::now();
  p.signal(sig);
  (void)backoff::test::wait_until_gone(p.pid(), std::chrono::seconds(60));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  std::cout << "[response] " << phase << ": " << s << " s\n";
  return {p.wait(std::chrono::seconds(5)), s};
}

// Before: the handler only set a flag that nothing polled while the scenario was being read, and
// SA_RESTART resumed the read: a FIFO nobody writes held `sim` for ever.
TEST(SignalResponse, SimReadingAScenario) {
  const backoff::test::test_scratch scratch("signals");
  const fs::path fifo = scratch / "scenario.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  process_probe p({"sim", fifo.string()});
  // Before the runs there is no handler: whenever it lands, the signal's default action ends
  // the process (before, the handler held it: sim hung in open(), which has no writer).
  std::this_thread::sleep_for(300ms);
  const auto [r, s] = signal_and_time(p, SIGTERM, "sim, reading the scenario");
  ASSERT_TRUE(r.finished) << "still running a minute after SIGTERM";
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_LT(s, bound_s);
}

// Before: SIGTERM waited for the check of every point, then stopped the first runs and wrote
// their partial outputs. Reading and checking 138,004 points takes over a second: after 0.2 s of
// CPU time the signal lands in one or the other.
TEST(SignalResponse, SweepCheckingALargeGrid) {
  const backoff::test::test_scratch scratch("signals");
  const fs::path out = scratch / "out";
  process_probe p({"sweep", "mm1", "--set",
                   "sweep.workload.rate_per_s={start=1, stop=70, step=0.002}", "--set",
                   "sweep.server.servers=[1, 2, 3, 4]", "--set", "run.duration=1s", "--no-progress",
                   "--out", out.string()});
  const long start = cpu_ticks(p.pid());
  ASSERT_TRUE(wait_until(p, false, [&] { return cpu_ticks(p.pid()) >= start + 20; }));
  const auto [r, s] = signal_and_time(p, SIGTERM, "sweep, checking 138,004 points");
  ASSERT_TRUE(r.finished);
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_LT(s, bound_s);
  EXPECT_FALSE(fs::exists(out / "summary.json")) << "nothing had run: nothing is written";
}

TEST(SignalResponse, SweepRunning) {
  const backoff::test::test_scratch scratch("signals");
  const fs::path out = scratch / "out";
  process_probe p(
      {"sweep", "outage-tipping", "--no-progress", "--threads", "2", "--out", out.string()});
  const long start = cpu_ticks(p.pid());
  ASSERT_TRUE(wait_until(p, true, [&] { return cpu_ticks(p.pid()) >= start + 20; }));
  const auto [r, s] = signal_and_time(p, SIGINT, "sweep, running");
  ASSERT_TRUE(r.finished);
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_LT(s, bound_s);
  EXPECT_TRUE(fs::exists(out / "summary.json")) << "the finished runs are written";
}

TEST(SignalResponse, DelaysPrintingMillionsOfDelays) {
  process_probe p({"delays", "-p", "grpc", "-n", "100000000", "-r", "100000", "-f", "csv"});
  ASSERT_TRUE(wait_until(p, false, [&] {
    std::error_code ec;
    return fs::file_size(p.out_path(), ec) > 100'000;
  }));
  const auto [r, s] = signal_and_time(p, SIGTERM, "delays, printing");
  ASSERT_TRUE(r.finished);
  EXPECT_EQ(r.status, 143);
  EXPECT_LT(s, bound_s);
}

TEST(SignalResponse, ScriptBetweenAttempts) {
  const backoff::test::test_scratch scratch("signals");
  const fs::path file = scratch / "retry.ftsh";
  std::ofstream(file) << "try for 1 hour every 1s\n  sh -c 'exit 1'\nend\n";
  process_probe p({"script", file.string()});
  std::this_thread::sleep_for(300ms);
  const auto [r, s] = signal_and_time(p, SIGTERM, "script, between attempts");
  ASSERT_TRUE(r.finished);
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_LT(s, bound_s);
}

TEST(SignalResponse, ForallWithHundredsOfItems) {
  std::vector<std::string> args{"forall", "--times", "1"};
  for (int i = 1; i <= 300; ++i) args.push_back(std::to_string(i));
  args.insert(args.end(), {"--", "sleep", "30"});
  process_probe p(args);
  std::this_thread::sleep_for(500ms);
  const auto [r, s] = signal_and_time(p, SIGTERM, "forall, 300 items running");
  ASSERT_TRUE(r.finished);
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_LT(s, bound_s);
}

}  // namespace
