// SPDX-License-Identifier: Apache-2.0
// Time inside a system's services and users (docs/SYSTEMS.md): a concurrency curve re-read while
// a request works (smira's server (2016)), a pause that stops a service (the article's SIGSTOP),
// users who think before their first operation, and a first backoff that grows from the think
// time (smira's Go client). Each case is small enough to work out by hand.
#include <gtest/gtest.h>

#include <string>

#include "system_scenario.hpp"

namespace system_time_test {

using backoff::test::replaced;
using backoff::test::system_error;
using backoff::test::system_field;
using backoff::test::system_run;

// Two requests, at 0 and 50 ms, to a server whose service time doubles with each request in
// service beyond the first: D(1) = 100 ms, D(2) = 200 ms.
const std::string curve = R"toml(scenario = "curve"
model = "system"
[run]
duration = "100ms"
drain = "10s"
[service.server]
workers = 0
service_time = "concurrency(base=100ms, limit=1, factor=2, k=1, tick=10ms)"
[[clients]]
to = "server"
arrivals = "constant(rate=20)"
edge = "once"
[edge.once]
max_attempts = 1
[[strategy]]
name = "once"
)toml";

TEST(SystemTime, ACurveWithATickSlowsWorkAlreadyUnderWay) {
  // With a tick, the first request sees N = 2 from 50 ms on: it needs 200 ms and ends at 200 ms.
  // The second then sees N = 1 (100 ms), which its 150 ms have passed: it ends at that instant
  // (or at its next check, 10 ms on).
  const auto ticking = system_run(curve).strategies.at(0);
  EXPECT_EQ(ticking.completed, 2u);
  EXPECT_NEAR(system_field(ticking, "services.server.latency_s.p99"), 0.200, 0.001);
  const double second = system_field(ticking, "services.server.latency_s.p50");
  EXPECT_GE(second, 0.1495);
  EXPECT_LE(second, 0.1605);
  // Read once, at the start: the first needs 100 ms (N = 1), the second 200 ms (N = 2).
  const auto once = system_run(replaced(curve, ", tick=10ms", "")).strategies.at(0);
  EXPECT_NEAR(system_field(once, "services.server.latency_s.p50"), 0.100, 0.001);
  EXPECT_NEAR(system_field(once, "services.server.latency_s.p99"), 0.200, 0.001);
}

// A request at 0 and one at 500 ms; the server stops from 50 ms to 1050 ms.
const std::string paused = R"toml(scenario = "paused"
model = "system"
[run]
duration = "600ms"
drain = "10s"
[service.server]
workers = 0
service_time = "constant(value=100ms)"
faults = [{ at = "50ms", for = "1s", fault = "outage(action=pause)" }]
[[clients]]
to = "server"
arrivals = "constant(rate=2)"
edge = "once"
[edge.once]
max_attempts = 1
[[strategy]]
name = "once"
)toml";

TEST(SystemTime, APauseStopsWorkUnderWayAndHoldsWhatArrives) {
  const auto plain = system_run(paused).strategies.at(0);
  EXPECT_EQ(plain.completed, 2u);
  // The first had 50 ms of work left when the server stopped: it ends 50 ms after the resume.
  EXPECT_NEAR(system_field(plain, "services.server.latency_s.p99"), 1.100, 0.002);
  // The second waited from 500 ms to the resume, then worked 100 ms (its latency counts from
  // its arrival, as a client sees it).
  EXPECT_NEAR(system_field(plain, "services.server.latency_s.p50"), 0.650, 0.001);
  // smira's server measures wall time since a request started, so the pause counts: the
  // first passes its check at the resume instant.
  const auto curved = system_run(replaced(paused, "\"constant(value=100ms)\"",
                                          "\"concurrency(base=100ms, limit=10, tick=10ms)\""))
                          .strategies.at(0);
  EXPECT_NEAR(system_field(curved, "services.server.latency_s.p99"), 1.050, 0.002);
  EXPECT_NEAR(system_field(curved, "services.server.latency_s.p50"), 0.650, 0.001);
}

// One user, or a hundred, who think for a second between operations.
const std::string thinking = R"toml(scenario = "thinking"
model = "system"
[run]
duration = "1500ms"
drain = "10s"
[service.server]
workers = 0
service_time = "constant(value=10ms)"
[[clients]]
to = "server"
arrivals = "closed(users=100)"
think = "constant(value=1s)"
think_first = true
edge = "once"
[edge.once]
max_attempts = 1
[[strategy]]
name = "once"
)toml";

TEST(SystemTime, UsersWhoThinkFirstStartAfterTheirThinkTime) {
  // Thinking first, each user's first operation starts at 1 s and its second would start at
  // 2.01 s, after the run's 1.5 s, when arrivals have stopped; starting at once, each has two (at
  // 0 and at 1.01 s).
  EXPECT_EQ(system_run(thinking).strategies.at(0).operations, 100u);
  EXPECT_EQ(system_run(replaced(thinking, "think_first = true", "think_first = false"))
                .strategies.at(0)
                .operations,
            200u);
}

TEST(SystemTime, TheFirstBackoffMayGrowFromTheThinkTime) {
  // A server that fails everything; two attempts an operation with smira's backoff. Its first
  // backoff grows from the think time (1 s * e = 2.7 s) or from its own 271.8 ms, +- N(0, 0.1 s).
  std::string text = replaced(thinking, "closed(users=100)", "closed(users=1)");
  text = replaced(text, "constant(value=10ms)\"", "constant(value=0s)\"\nerrors = \"100%:503\"");
  text = replaced(text, "duration = \"1500ms\"", "duration = \"3s\"");
  text = replaced(text, "max_attempts = 1", "max_attempts = 2\npolicy = \"smira-go\"");
  text = replaced(text, "edge = \"once\"", "edge = \"once\"\nbackoff_from_think = true");
  // From the think time: the first operation (1 s to ~3.7 s) outlasts the run's 3 s.
  const auto grown = system_run(text).strategies.at(0);
  EXPECT_EQ(grown.operations, 1u);
  EXPECT_EQ(grown.attempts, 2u);
  // From 271.8 ms: operations start at 1 s and ~2.27 s (a third would at ~3.54 s, after the run).
  const auto own =
      system_run(replaced(text, "backoff_from_think = true", "backoff_from_think = false"))
          .strategies.at(0);
  EXPECT_EQ(own.operations, 2u);
  EXPECT_EQ(own.attempts, 4u);
}

TEST(SystemTime, BadTimingKeysAreOneLineWithTheirPlace) {
  const std::string half_pause =
      system_error(replaced(paused, "outage(action=pause)", "outage(action=pause, rate=50%)"));
  EXPECT_NE(half_pause.find("mine.toml:"), std::string::npos) << half_pause;
  EXPECT_NE(half_pause.find("a pause stops the whole server"), std::string::npos) << half_pause;
  const std::string no_tick = system_error(replaced(curve, "tick=10ms", "tick=0s"));
  EXPECT_NE(no_tick.find("tick must be above 0s"), std::string::npos) << no_tick;
  const std::string open_loop =
      system_error(replaced(thinking, "closed(users=100)", "poisson(rate=10)"));
  EXPECT_NE(open_loop.find("think_first: applies to closed arrivals only"), std::string::npos)
      << open_loop;
  const std::string decided_after =
      system_error(replaced(paused, "workers = 0", "workers = 0\nfaults_decided = \"after-work\""));
  EXPECT_NE(decided_after.find("service.server.faults_decided: after-work cannot hold a request "
                               "before its work (outage action=hang or pause)"),
            std::string::npos)
      << decided_after;
  for (const std::string& message : {half_pause, no_tick, open_loop, decided_after}) {
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

}  // namespace system_time_test
