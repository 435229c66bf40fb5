// SPDX-License-Identifier: Apache-2.0
// Guards on a system's edges beyond retries (docs/SYSTEMS.md, "[edge.NAME]"): an AIMD window that
// paces a caller's calls (AEONCASE, 2019), and the refusal of a strategy that would resend at once
// without end over a hop that takes no time.
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "system_scenario.hpp"

namespace system_guards_test {

using backoff::test::replaced;
using backoff::test::system_error;
using backoff::test::system_field;
using backoff::test::system_run;

// 50 users without a pause against a server of two workers and no queue (40 answers a second):
// a request beyond the two is shed at once, and the users' one client process resends.
const std::string crowded = R"toml(scenario = "crowded"
model = "system"
[run]
duration = "20s"
drain = "5s"
[service.server]
workers = 2
queue = 0
service_time = "constant(value=50ms)"
[[clients]]
to = "server"
arrivals = "closed(users=50)"
latency = "constant(value=1ms)"
edge = "users"
[edge.users]
policy = "none"
[[strategy]]
name = "at-once"
[[strategy]]
name = "window"
edge.users.window = "aimd(initial=1, decrease=0.5, variant=reno)"
)toml";

TEST(SystemGuards, AWindowOnAnEdgeKeepsItsCallersBelowWhatTheServiceTakes) {
  const auto r = system_run(crowded);
  const auto& at_once = r.strategies.at(0);
  const auto& window = r.strategies.at(1);
  // Both get what the two workers give: 40 answers a second for 20 s.
  for (const auto& s : r.strategies) {
    EXPECT_NEAR(static_cast<double>(s.completed), 800.0, 80.0) << s.name;
  }
  // Resending at once, every shed request comes straight back: most attempts are shed.
  EXPECT_GT(at_once.attempts_per_operation, 10.0);
  EXPECT_GT(system_field(at_once, "services.server.rejected"), 10.0 * 800.0);
  // The window holds about as many calls in flight as the two workers take: few are shed.
  EXPECT_LT(window.attempts_per_operation, 2.0);
  EXPECT_LT(system_field(window, "services.server.rejected"),
            0.05 * system_field(at_once, "services.server.rejected"));
}

TEST(SystemGuards, AWindowWantsNoBackoffAndAZeroDelayLoopStopsTheRun) {
  const std::string backoff = system_error(
      replaced(crowded, "edge.users.window = \"aimd(initial=1, decrease=0.5, variant=reno)\"",
               "edge.users.window = \"aimd(initial=1, decrease=0.5, variant=reno)\"\n"
               "edge.users.policy = \"exponential(initial=10ms)\""));
  EXPECT_NE(backoff.find("mine.toml:"), std::string::npos) << backoff;
  EXPECT_NE(backoff.find("edge users: the system model cannot honour window: a window resends "
                         "from its queue"),
            std::string::npos)
      << backoff;
  // Resending at once without end over a hop of 0 s: a shed request comes back at the same
  // instant, again and again; the run stops with one line instead of spinning.
  std::string instant = "(no error)";
  try {
    system_run(replaced(crowded, "latency = \"constant(value=1ms)\"", "latency = \"0s\""),
               {"run.max_events_per_instant=100000"});
  } catch (const std::exception& e) {
    instant = e.what();
  }
  EXPECT_NE(instant.find("a loop that feeds itself at zero delay"), std::string::npos) << instant;
  EXPECT_EQ(instant.find('\n'), std::string::npos) << instant;
}

}  // namespace system_guards_test
