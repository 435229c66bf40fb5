// SPDX-License-Identifier: Apache-2.0
// Services in layers (docs/SYSTEMS.md): a service's work after its calls, a retry that skips
// part of the work, errors that fade with the caller's time since its first attempt, a layer
// that gave up telling its caller not to retry, a breaker asked before first tries only; and
// faults that take capacity away (a share of the workers, a cold start whose slowdown wears off).
// Each case is worked out by hand, or bounded statistically with a fixed seed.
#include <gtest/gtest.h>

#include <string>

#include "system_scenario.hpp"

namespace system_layers_test {

using backoff::test::replaced;
using backoff::test::system_error;
using backoff::test::system_field;
using backoff::test::system_run;

// One request at 0: api works 100 ms and calls db, which is down for its first 60 ms.
const std::string ordered = R"toml(scenario = "ordered"
model = "system"
[run]
duration = "500ms"
drain = "10s"
[service.api]
workers = 0
service_time = "constant(value=100ms)"
calls = [{ to = "db", edge = "db" }]
[service.db]
workers = 0
service_time = "constant(value=50ms)"
faults = [{ at = "0s", for = "60ms", fault = "outage()" }]
[[clients]]
to = "api"
arrivals = "constant(rate=1)"
edge = "once"
[edge.once]
max_attempts = 1
[edge.db]
max_attempts = 1
[[strategy]]
name = "once"
)toml";

TEST(SystemLayers, WorkAfterCallsComesOnceTheCallsAreOverWhateverTheyGave) {
  // Work first: db is called at 100 ms, after its outage, and answers at 150 ms.
  const auto before = system_run(ordered).strategies.at(0);
  EXPECT_EQ(before.completed, 1u);
  EXPECT_NEAR(system_field(before, "services.api.latency_s.p50"), 0.150, 0.0005);
  // Calls first: db is called at 0, in its outage, and fails at once; api still does its work
  // (100 ms), then fails.
  const std::string calls_first =
      replaced(ordered, "calls = [", "work = \"after-calls\"\ncalls = [");
  const auto after = system_run(calls_first).strategies.at(0);
  EXPECT_EQ(after.completed, 0u);
  EXPECT_EQ(system_field(after, "services.db.failed"), 1.0);
  EXPECT_EQ(system_field(after, "services.api.failed"), 1.0);
  // The client retries at once when api's failure comes back, at 100 ms (not at 0, as it would
  // if a failed call skipped the work): db answers at 150 ms, api's work ends at 250 ms.
  const auto retried = system_run(replaced(calls_first, "[edge.once]\nmax_attempts = 1",
                                           "[edge.once]\nmax_attempts = 2"))
                           .strategies.at(0);
  EXPECT_EQ(retried.completed, 1u);
  ASSERT_TRUE(retried.latency_s);
  EXPECT_NEAR(retried.latency_s->p50, 0.250, 0.0005);
  // Calls first, no outage: db from 0 to 50 ms, then api's work to 150 ms.
  const auto later =
      system_run(replaced(calls_first, "at = \"0s\"", "at = \"5s\"")).strategies.at(0);
  EXPECT_EQ(later.completed, 1u);
  EXPECT_NEAR(system_field(later, "services.api.latency_s.p50"), 0.150, 0.0005);
  EXPECT_NEAR(system_field(later, "services.db.latency_s.p50"), 0.050, 0.0005);
}

// 2000 operations, 10 a second; each first attempt fails after its 100 ms of work (the errors
// are decided when the work ends), and its retry leaves 10 ms later, 110 ms after the first.
const std::string fading = R"toml(scenario = "fading"
model = "system"
[run]
duration = "200s"
drain = "10s"
[service.server]
workers = 0
service_time = "constant(value=100ms)"
faults_decided = "after-work"
errors = { rate = 1.0, fade = "1ms" }
[[clients]]
to = "server"
arrivals = "constant(rate=10)"
edge = "twice"
[edge.twice]
policy = "constant(initial=10ms)"
max_attempts = 2
[[strategy]]
name = "twice"
)toml";

TEST(SystemLayers, ErrorsFadeWithTheCallersTimeSinceItsFirstAttempt) {
  // Gone 1 ms after the first attempt: every retry succeeds, at 210 ms.
  const auto gone = system_run(fading).strategies.at(0);
  EXPECT_EQ(gone.operations, 2000u);
  EXPECT_EQ(gone.completed, 2000u);
  EXPECT_EQ(system_field(gone, "services.server.attempts"), 4000.0);
  ASSERT_TRUE(gone.latency_s);
  EXPECT_NEAR(gone.latency_s->p50, 0.210, 1e-6);
  // Fading over 220 ms: a retry 110 ms on fails half the time (binomial, sd 0.011; 5 sd).
  const auto half =
      system_run(replaced(fading, "fade = \"1ms\"", "fade = \"220ms\"")).strategies.at(0);
  EXPECT_NEAR(half.success_rate(), 0.5, 0.055);
  // Not fading: every retry fails too.
  const auto steady = system_run(replaced(fading, ", fade = \"1ms\"", "")).strategies.at(0);
  EXPECT_EQ(steady.completed, 0u);
}

TEST(SystemLayers, ARetryMaySkipPartOfItsWork) {
  // A retry does U(0, 1) of its 100 ms: an operation takes 110 ms plus that, so its median is
  // near 160 ms (the median of 2000 uniforms: sd 1.1 ms) and none takes the whole 210 ms.
  const auto skipping =
      system_run(replaced(fading, "faults_decided", "retry_skips_work = true\nfaults_decided"))
          .strategies.at(0);
  EXPECT_EQ(skipping.completed, 2000u);
  ASSERT_TRUE(skipping.latency_s);
  EXPECT_NEAR(skipping.latency_s->p50, 0.160, 0.006);
  EXPECT_GT(skipping.latency_s->max, 0.190);
  EXPECT_LT(skipping.latency_s->max, 0.2101);
  EXPECT_GT(skipping.latency_s->p50, 0.110);
}

// a calls b calls c, which always fails; each edge tries 3 times.
const std::string chain = R"toml(scenario = "chain"
model = "system"
[run]
duration = "10s"
drain = "10s"
[service.a]
workers = 0
calls = [{ to = "b", edge = "ab" }]
[service.b]
workers = 0
calls = [{ to = "c", edge = "bc" }]
[service.c]
workers = 0
service_time = "constant(value=1ms)"
errors = "100%:503"
[[clients]]
to = "a"
arrivals = "constant(rate=10)"
edge = "client"
[edge.client]
max_attempts = 1
[edge.ab]
policy = "constant(initial=1ms)"
max_attempts = 3
[edge.bc]
policy = "constant(initial=1ms)"
max_attempts = 3
[[strategy]]
name = "every-layer"
[[strategy]]
name = "told-not-to"
edge.bc.on_give_up = "do-not-retry"
)toml";

TEST(SystemLayers, ALayerThatGaveUpTellsItsCallerNotToRetry) {
  const auto r = system_run(chain);
  const auto& every = r.strategies.at(0);
  const auto& told = r.strategies.at(1);
  ASSERT_EQ(every.operations, 100u);
  // Every layer retrying: 3 calls to b, each making 3 to c.
  EXPECT_EQ(system_field(every, "services.b.attempts"), 300.0);
  EXPECT_EQ(system_field(every, "services.c.attempts"), 900.0);
  // b gives up after its 3 calls to c and says so: a stops at its first call.
  EXPECT_EQ(system_field(told, "services.b.attempts"), 100.0);
  EXPECT_EQ(system_field(told, "services.c.attempts"), 300.0);
  EXPECT_EQ(told.completed, 0u);
  // The same from the edge's own table; the signal goes one layer up only when the edge above
  // says so too (the client never retries, so nothing changes at the top).
  const auto from_edge =
      system_run(replaced(chain, "[edge.bc]\n", "[edge.bc]\non_give_up = \"do-not-retry\"\n"));
  EXPECT_EQ(system_field(from_edge.strategies.at(0), "services.c.attempts"), 300.0);
  // A strategy may set it back.
  const auto undone = system_run(
      replaced(replaced(chain, "[edge.bc]\n", "[edge.bc]\non_give_up = \"do-not-retry\"\n"),
               "edge.bc.on_give_up = \"do-not-retry\"", "edge.bc.on_give_up = \"retryable\""));
  EXPECT_EQ(system_field(undone.strategies.at(1), "services.c.attempts"), 900.0);
}

// Four users, each making two operations of 100 ms at a four-worker server, one after the
// other; the server loses half its workers for its first 200 ms.
const std::string halved = R"toml(scenario = "halved"
model = "system"
[run]
duration = "10s"
[service.server]
workers = 4
service_time = "constant(value=100ms)"
faults = [{ at = "0s", for = "200ms", fault = "capacity(share=50%)" }]
[[clients]]
to = "server"
arrivals = "closed(users=4)"
operations = 8
edge = "once"
[edge.once]
max_attempts = 1
[[strategy]]
name = "once"
)toml";

TEST(SystemLayers, ACapacityDropLeavesAShareOfTheWorkers) {
  // Two workers: two operations from 0 to 100 ms, two queued until then (to 200 ms); the first
  // two users' next ones queue behind them. At 200 ms all four workers are back: the last four
  // run together, to 300 ms.
  const auto dropped = system_run(halved).strategies.at(0);
  EXPECT_EQ(dropped.completed, 8u);
  EXPECT_NEAR(dropped.makespan_s, 0.300, 1e-6);
  ASSERT_TRUE(dropped.latency_s);
  EXPECT_NEAR(dropped.latency_s->max, 0.200, 0.0005);
  // Whole: four at a time, to 200 ms, none waiting.
  const auto whole = system_run(replaced(halved, "share=50%", "share=100%")).strategies.at(0);
  EXPECT_NEAR(whole.makespan_s, 0.200, 1e-6);
  EXPECT_NEAR(whole.latency_s->max, 0.100, 0.0005);
  // A share below one worker leaves one: one at a time to 200 ms (two served), then four.
  const auto one = system_run(replaced(halved, "share=50%", "share=10%")).strategies.at(0);
  EXPECT_EQ(one.completed, 8u);
  EXPECT_NEAR(one.makespan_s, 0.400, 1e-6);
}

// A request each second at a server that restarted at 0 and works 100 ms when warm.
const std::string cold = R"toml(scenario = "cold"
model = "system"
[run]
duration = "2500ms"
[service.server]
workers = 0
service_time = "constant(value=100ms)"
faults = [{ at = "0s", fault = "cold_start(factor=3, half_life=1s)" }]
[[clients]]
to = "server"
arrivals = "constant(rate=1)"
edge = "once"
[edge.once]
max_attempts = 1
[[strategy]]
name = "once"
)toml";

TEST(SystemLayers, AColdStartsSlowdownWearsOff) {
  // At 0: three times the work; 1 s on, 1 + 2/2 = 2 times; 2 s on, 1.5 times.
  const auto r = system_run(cold).strategies.at(0);
  ASSERT_EQ(r.completed, 3u);
  ASSERT_TRUE(r.latency_s);
  EXPECT_NEAR(r.latency_s->max, 0.300, 0.0005);
  EXPECT_NEAR(r.latency_s->p50, 0.200, 0.0005);
  EXPECT_NEAR(r.makespan_s, 2.150, 1e-6);
}

// A server that always fails; calls of three attempts, 1 ms apart, five a second; a breaker that
// opens for 10 s after two failures in a row.
const std::string tripped = R"toml(scenario = "tripped"
model = "system"
[run]
duration = "1s"
[service.server]
workers = 0
service_time = "constant(value=1ms)"
errors = "100%:503"
[[clients]]
to = "server"
arrivals = "constant(rate=5)"
edge = "c"
[edge.c]
policy = "constant(initial=1ms)"
max_attempts = 3
breaker = "breaker(kind=consecutive, failures=2, open=10s)"
[[strategy]]
name = "every-attempt"
[[strategy]]
name = "first-tries"
edge.c.breaker_asks = "first-tries"
)toml";

TEST(SystemLayers, ABreakerAskedBeforeFirstTriesOnlyLetsACallsRetriesGo) {
  const auto r = system_run(tripped);
  // Asked before every attempt: the first call's two failures open it, and its third attempt is
  // refused; the four calls after it are refused before their first try.
  EXPECT_EQ(r.strategies.at(0).operations, 5u);
  EXPECT_EQ(r.strategies.at(0).attempts, 2u);
  // Before first tries only: the first call makes all three; the others are refused as before.
  EXPECT_EQ(r.strategies.at(1).attempts, 3u);
  EXPECT_EQ(r.strategies.at(1).completed, 0u);
  const std::string kind = system_error(
      replaced(tripped, "kind=consecutive, failures=2, open=10s", "kind=run-ratio, threshold=10%"));
  EXPECT_NE(kind.find("strategy first-tries"), std::string::npos) << kind;
  EXPECT_NE(kind.find("never refuses one"), std::string::npos) << kind;
  const std::string none = system_error(
      replaced(tripped, "breaker = \"breaker(kind=consecutive, failures=2, open=10s)\"\n", ""));
  EXPECT_NE(none.find("needs a breaker"), std::string::npos) << none;
  const std::string word =
      system_error(replaced(tripped, "asks = \"first-tries\"", "asks = \"sometimes\""));
  EXPECT_NE(word.find("expected \"every-attempt\" or \"first-tries\""), std::string::npos) << word;
}

TEST(SystemLayers, BadLayerKeysAreOneLineWithTheirPlace) {
  const std::string work =
      system_error(replaced(ordered, "calls = [", "work = \"sideways\"\ncalls = ["));
  EXPECT_NE(work.find("mine.toml:"), std::string::npos) << work;
  EXPECT_NE(work.find("service.api.work"), std::string::npos) << work;
  const std::string edge =
      system_error(replaced(chain, "[edge.bc]\n", "[edge.bc]\non_give_up = \"never\"\n"));
  EXPECT_NE(edge.find("edge.bc.on_give_up"), std::string::npos) << edge;
  EXPECT_NE(edge.find("\"do-not-retry\""), std::string::npos) << edge;
  const std::string strategy =
      system_error(replaced(chain, "on_give_up = \"do-not-retry\"", "on_give_up = \"nope\""));
  EXPECT_NE(strategy.find("strategy told-not-to"), std::string::npos) << strategy;
  EXPECT_NE(strategy.find("edge.bc.on_give_up"), std::string::npos) << strategy;
  const std::string fade = system_error(replaced(fading, "fade = \"1ms\"", "fade = \"0s\""));
  EXPECT_NE(fade.find("service.server.errors"), std::string::npos) << fade;
  EXPECT_NE(fade.find("'fade' must be above 0s"), std::string::npos) << fade;
  const std::string unbounded = system_error(replaced(halved, "workers = 4", "workers = 0"));
  EXPECT_NE(unbounded.find("service.server.faults"), std::string::npos) << unbounded;
  EXPECT_NE(unbounded.find("workers = 0 (no limit)"), std::string::npos) << unbounded;
  const std::string late =
      system_error(replaced(cold, "workers = 0", "workers = 0\nfaults_decided = \"after-work\""));
  EXPECT_NE(late.find("service.server.faults_decided"), std::string::npos) << late;
  const std::string typo = system_error(replaced(chain, "edge.bc.on_give_up", "edge.bc.on_giveup"));
  EXPECT_NE(typo.find("on_give_up"), std::string::npos) << typo;  // the did-you-mean
}

}  // namespace system_layers_test
