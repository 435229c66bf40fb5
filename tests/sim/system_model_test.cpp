// SPDX-License-Identifier: Apache-2.0
// model = "system" (docs/SYSTEMS.md): the SPEC's minimal file as written, queueing theory where
// it has an answer (M/M/1's sojourn), the arithmetic of retries at every layer, the accept limit,
// knobs, measured distributions, and one line for each kind of bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/hdr_histogram.hpp"
#include "report/hdr_log.hpp"
#include "scratch.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"
#include "system_scenario.hpp"
#include "systems/distribution.hpp"

namespace system_model_test {

namespace sim = backoff::sim;
namespace report = backoff::report;

// The SPEC's minimal system file, as a user would write it.
const std::string minimal_system = R"toml(scenario = "mine"
model = "system"
seed = 1

[run]
duration = "60s"

[service.api]
workers = 8
queue = 100
discipline = "fifo"
service_time = "lognormal(median=4ms, sigma=0.5)"
calls = [{ to = "db", edge = "db" }]

[service.db]
workers = 4
queue = 50
service_time = "exponential(mean=2ms)"

[[clients]]
name = "users"
to = "api"
arrivals = "poisson(rate=500)"
edge = "front"

[edge.front]
policy = "exponential(initial=10ms, factor=2, max=1s, jitter=full)"
max_attempts = 3

[edge.db]
policy = "none"
max_attempts = 1

[[strategy]]
name = "as-is"

[[strategy]]
name = "budgeted"
edge.front.budget = "token-bucket(max=10, ratio=0.1)"
)toml";

using backoff::test::replaced;
using backoff::test::system_error;
using backoff::test::system_field;
using backoff::test::system_run;

TEST(SystemModel, TheMinimalFileRunsAsWritten) {
  const auto r = system_run(minimal_system, {"run.duration=\"10s\""});
  ASSERT_EQ(r.strategies.size(), 2u);
  for (const auto& s : r.strategies) {
    // Poisson arrivals at 500/s for 10 s: 5000 +- 5 sigma (sigma = sqrt(5000) ~ 71).
    EXPECT_NEAR(static_cast<double>(s.operations), 5000.0, 355.0) << s.name;
    // Far below capacity (8 workers at ~4.5 ms, 4 at 2 ms): every operation completes once.
    EXPECT_EQ(s.completed, s.operations) << s.name;
    EXPECT_EQ(s.attempts, s.operations) << s.name;
    const auto ops = static_cast<double>(s.operations);
    EXPECT_EQ(system_field(s, "services.api.arrivals"), ops);
    EXPECT_EQ(system_field(s, "services.db.attempts"), ops);
    EXPECT_EQ(system_field(s, "services.db.amplification"), 1.0);
    EXPECT_EQ(system_field(s, "services.api.rejected"), 0.0);
    EXPECT_EQ(system_field(s, "deepest_calls_per_request"), 1.0);
    // The api's latency holds the db's: its median above 4 ms, the db's near 2 ln 2 ms.
    EXPECT_GT(system_field(s, "services.api.latency_s.p50"), 0.004);
    EXPECT_NEAR(system_field(s, "services.db.latency_s.p50"), 0.002 * std::log(2.0), 0.0004);
  }
}

TEST(SystemModel, OneWorkerIsAnMM1Queue) {
  // lambda = 500/s, mu = 1000/s: the sojourn time is exponential with rate mu - lambda, so its
  // median is ln 2 / 500 s = 1.386 ms and its p99 ln 100 / 500 s = 9.21 ms.
  const std::string mm1 = R"toml(scenario = "mm1"
model = "system"
[run]
duration = "200s"
[service.server]
workers = 1
queue = 100000
service_time = "exponential(mean=1ms)"
[[clients]]
to = "server"
arrivals = "poisson(rate=500)"
edge = "once"
[edge.once]
max_attempts = 1
[[strategy]]
name = "once"
)toml";
  const auto r = system_run(mm1);
  const auto& s = r.strategies.at(0);
  EXPECT_NEAR(system_field(s, "services.server.latency_s.p50"), std::log(2.0) / 500.0,
              0.05 * std::log(2.0) / 500.0);
  EXPECT_NEAR(system_field(s, "services.server.latency_s.p99"), std::log(100.0) / 500.0,
              0.08 * std::log(100.0) / 500.0);
}

const std::string layered = R"toml(scenario = "layers"
model = "system"
[run]
duration = "5s"
[service.front]
workers = 0
service_time = "constant(value=1ms)"
calls = [{ to = "back", edge = "inner" }]
[service.back]
workers = 0
service_time = "constant(value=1ms)"
errors = "100%:503"
[[clients]]
to = "front"
arrivals = "constant(rate=100)"
edge = "outer"
[edge.outer]
policy = "none"
max_attempts = 3
[edge.inner]
policy = "none"
max_attempts = 3
[[strategy]]
name = "retry-every-layer"
[[strategy]]
name = "retry-top-only"
edge.inner.max_attempts = 1
)toml";

TEST(SystemModel, RetriesAtEveryLayerMultiply) {
  // The back fails every call: 3 attempts from the front's loop for each of the clients' 3.
  const auto r = system_run(layered);
  const auto& every = r.strategies.at(0);
  const auto& top = r.strategies.at(1);
  EXPECT_EQ(every.completed, 0u);
  EXPECT_EQ(system_field(every, "services.back.amplification"), 9.0);
  EXPECT_EQ(system_field(every, "services.front.amplification"), 3.0);
  EXPECT_EQ(system_field(every, "deepest_calls_per_request"), 9.0);
  EXPECT_EQ(system_field(top, "services.back.amplification"), 3.0);
  EXPECT_EQ(every.attempts_per_operation, 3.0);
  // Arrivals count first attempts only: one per client operation at the front.
  EXPECT_EQ(system_field(every, "services.front.arrivals"), static_cast<double>(every.operations));
}

TEST(SystemModel, AStrategyMaySetAnyEdgesGuards) {
  const auto r =
      system_run(replaced(layered, "name = \"retry-top-only\"\nedge.inner.max_attempts = 1",
                          "name = \"retry-top-only\"\nedge.inner.max_attempts = 1\n"
                          "edge.outer.max_attempts = 2"));
  EXPECT_EQ(system_field(r.strategies.at(1), "services.back.amplification"), 2.0);
}

TEST(SystemModel, TheAcceptLimitRefusesAtOnceAndARefusalIsRetriedEvenWhenNotIdempotent) {
  // One connection at a time, each held 50 ms, 100 arrivals a second: most are refused. A refused
  // connection was never sent, so a non-idempotent call still retries it.
  const std::string text = R"toml(scenario = "accept"
model = "system"
[run]
duration = "5s"
[service.one]
workers = 1
max_connections = 1
service_time = "constant(value=50ms)"
[[clients]]
to = "one"
arrivals = "constant(rate=100)"
edge = "e"
[edge.e]
policy = "constant(initial=1ms)"
max_attempts = 2
idempotent = false
[[strategy]]
name = "s"
)toml";
  const auto r = system_run(text);
  const auto& s = r.strategies.at(0);
  EXPECT_GT(system_field(s, "services.one.rejected"), 0.5 * static_cast<double>(s.operations));
  EXPECT_GT(s.attempts_per_operation, 1.5);  // the refused first attempts were retried
  EXPECT_EQ(system_field(s, "services.one.peak_in_flight"), 1.0);
}

TEST(SystemModel, KnobsSetEveryKeyTheyNameFromSetAndSweep) {
  const std::string knobbed = minimal_system + R"toml(
[knobs]
rate = "clients.0.arrivals.rate"
"db.workers" = ["service.db.workers"]
)toml";
  const std::string tabled = replaced(knobbed, "arrivals = \"poisson(rate=500)\"",
                                      "arrivals = { kind = \"poisson\", rate = 500 }");
  const auto r = system_run(tabled, {"run.duration=\"10s\"", "rate=100"});
  EXPECT_NEAR(static_cast<double>(r.strategies.at(0).operations), 1000.0, 160.0);
  // A sweep over a knob: each point sets the key path it names.
  sim::scenario swept = sim::scenario::load(
      {"mine.toml", tabled + "\n[sweep]\nrate = [100, 300]\n"}, {"run.duration=\"10s\""});
  ASSERT_EQ(swept.point_count(), 2u);
  const auto points = sim::run_scenario(swept, {});
  ASSERT_EQ(points.points.size(), 2u);
  EXPECT_NEAR(static_cast<double>(points.points[0].strategies.at(0).runs.at(0).operations), 1000.0,
              160.0);
  EXPECT_NEAR(static_cast<double>(points.points[1].strategies.at(0).runs.at(0).operations), 3000.0,
              280.0);
  // A knob must name a value the file has: a spec string's number is reached through its table.
  const std::string unreachable = system_error(knobbed);
  EXPECT_NE(unreachable.find("knobs.rate: 'clients.0.arrivals.rate' is not a value of this file"),
            std::string::npos)
      << unreachable;
  // A knob's value that no key can take is named by the --set that brought it.
  const std::string bad = system_error(tabled, {"db.workers=-1"});
  EXPECT_NE(bad.find("--set db.workers: service.db.workers: -1 is out of range"), std::string::npos)
      << bad;
}

TEST(SystemModel, AMeasuredDistributionIsDrawnFromItsSamples) {
  const backoff::test::test_scratch scratch("system");
  {
    std::ofstream csv(scratch / "measured.csv");
    csv << "seconds\n";
    for (int i = 0; i < 1000; ++i) csv << (i % 2 == 0 ? "0.002\n" : "0.004\n");
  }
  // No queue at the db (a worker per request): its latency is its service time alone.
  const std::string text =
      replaced(replaced(minimal_system, "service_time = \"exponential(mean=2ms)\"",
                        "service_time = 'empirical(file=\"measured.csv\")'"),
               "workers = 4", "workers = 0");
  const auto r = system_run(text, {"run.duration=\"10s\""}, (scratch / "mine.toml").string());
  const auto& s = r.strategies.at(0);
  // Half at 2 ms, half at 4 ms (3 significant digits): the db's median is one of them.
  const double p50 = system_field(s, "services.db.latency_s.p50");
  EXPECT_TRUE(std::abs(p50 - 0.002) < 1e-5 || std::abs(p50 - 0.004) < 1e-5) << p50;
  EXPECT_NEAR(system_field(s, "services.db.latency_s.p99"), 0.004, 1e-5);
}

TEST(SystemModel, AHistogramLogIsReadAsLoadWroteItAndABadFileIsNamedWithItsLine) {
  namespace sm = backoff::systems;
  const backoff::test::test_scratch scratch("system");
  // Two intervals of `backoff load --histogram-log`: microseconds, 3 significant digits.
  report::hdr_histogram first, second;
  first.record(1000, 300);   // 1 ms
  second.record(3000, 100);  // 3 ms
  {
    std::ofstream log(scratch / "api.hlog");
    log << report::hdr_log_header(1.7e9, "Values in microseconds")
        << report::hdr_log_line(0.0, 1.0, first, 1e6)
        << report::hdr_log_line(1.0, 1.0, second, 1e6);
  }
  const auto table = sm::read_empirical(scratch / "api.hlog");
  EXPECT_EQ(table->samples, 400u);
  EXPECT_NEAR(table->mean_ns, 1.5e6, 1.5e6 * 0.002);  // (300 x 1 ms + 100 x 3 ms) / 400
  backoff::random_generator rng{7};
  const sm::distribution d = sm::parse_distribution("empirical(file=\"api.hlog\")", scratch.dir());
  int at_three = 0;
  for (int i = 0; i < 4000; ++i) at_three += d.sample(rng, 1) > 2'000'000 ? 1 : 0;
  EXPECT_NEAR(at_three, 1000, 120);  // a quarter of the samples, +- 4.4 sigma
  {
    std::ofstream csv(scratch / "bad.csv");
    csv << "seconds\n0.001\n0.002\nfast\n";
  }
  try {
    sm::read_empirical(scratch / "bad.csv");
    ADD_FAILURE() << "a CSV with a word in it was read";
  } catch (const backoff::parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:4: expected a number of seconds, found \"fast\""),
              std::string::npos)
        << e.what();
  }
  {
    std::ofstream csv(scratch / "empty.csv");
    csv << "seconds\n";
  }
  EXPECT_THROW(sm::read_empirical(scratch / "empty.csv"), backoff::parse_error);
}

TEST(SystemModel, TheSameSeedGivesTheSameRun) {
  const auto a = system_run(minimal_system, {"run.duration=\"3s\""});
  const auto b = system_run(minimal_system, {"run.duration=\"3s\""});
  ASSERT_EQ(a.strategies.size(), b.strategies.size());
  for (std::size_t i = 0; i < a.strategies.size(); ++i) {
    EXPECT_EQ(a.strategies[i].events, b.strategies[i].events);
    ASSERT_EQ(a.strategies[i].fields.size(), b.strategies[i].fields.size());
    for (std::size_t f = 0; f < a.strategies[i].fields.size(); ++f) {
      EXPECT_EQ(a.strategies[i].fields[f].value, b.strategies[i].fields[f].value)
          << a.strategies[i].fields[f].name;
    }
  }
}

TEST(SystemModel, BadInputIsOneLineWithItsPlace) {
  const std::map<std::string, std::pair<std::string, std::string>> cases{
      {"unknown service",
       {"calls = [{ to = \"db\", edge = \"db\" }]", "calls = [{ to = \"dbb\", edge = \"db\" }]"}},
      {"unknown edge", {"edge = \"front\"", "edge = \"frnt\""}},
      {"bad workers", {"workers = 4", "workers = -4"}},
      {"bad distribution", {"exponential(mean=2ms)", "exponential(mean=-2ms)"}},
      {"unknown kind", {"exponential(mean=2ms)", "exponentail(mean=2ms)"}},
      {"missing file",
       {"service_time = \"exponential(mean=2ms)\"",
        "service_time = 'empirical(file=\"nowhere.csv\")'"}},
      {"strategy edge", {"edge.front.budget", "edge.frnt.budget"}},
  };
  const std::map<std::string, std::string> expected{
      {"unknown service",
       "mine.toml:13:17: service.api.calls.0.to: no service named 'dbb' (did you mean 'db'?)"},
      {"unknown edge", "mine.toml:24:8: clients.0.edge: no [edge.frnt] (did you mean 'front'?)"},
      {"bad workers", "mine.toml:16:11: service.db.workers: -4 is out of range"},
      {"bad distribution",
       "mine.toml:18:16: service.db.service_time: bad distribution \"exponential(mean=-2ms)\": "
       "mean: "},
      {"unknown kind", "did you mean 'exponential'?"},
      {"missing file", "nowhere.csv: not a readable file"},
      {"strategy edge",
       "mine.toml:39:20: strategy budgeted: no [edge.frnt] (did you mean 'front'?)"},
  };
  for (const auto& [what, edit] : cases) {
    const std::string message = system_error(replaced(minimal_system, edit.first, edit.second));
    EXPECT_NE(message.find(expected.at(what)), std::string::npos) << what << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << what;
  }
}

TEST(SystemModel, CallsThatFormACycleAreRefusedUnlessBounded) {
  const std::string cycle = replaced(minimal_system, "service_time = \"exponential(mean=2ms)\"",
                                     "service_time = \"exponential(mean=2ms)\"\n"
                                     "calls = [{ to = \"api\", edge = \"db\" }]");
  const std::string message = system_error(cycle);
  EXPECT_NE(message.find("calls form a cycle: api -> db -> api"), std::string::npos) << message;
  // Bounded: a request three calls deep makes no further call (it fails), so each operation
  // fails after api -> db -> api. (With a worker pool at the api, the inner calls would wait
  // for workers the outer ones hold: a deadlock the model reproduces; here each request has its
  // own worker.)
  const auto r =
      system_run(replaced(replaced(cycle, "duration = \"60s\"", "duration = \"2s\"\nmax_depth = 3"),
                          "workers = 8", "workers = 0"));
  const auto& s = r.strategies.at(0);
  EXPECT_EQ(s.completed, 0u);
  EXPECT_EQ(system_field(s, "services.db.attempts"), static_cast<double>(s.attempts));
}

TEST(SystemModel, OtherModelsRefuseEdgeSettingsAndSystemStrategiesRefuseTopLevelGuards) {
  const std::string top = replaced(minimal_system, "edge.front.budget", "budget");
  EXPECT_NE(
      system_error(top).find("a system scenario sets guards per edge: write edge.NAME.budget"),
      std::string::npos)
      << system_error(top);
  const std::string other = R"toml(scenario = "x"
model = "queueing"
[[strategy]]
name = "s"
edge.a.max_attempts = 1
)toml";
  EXPECT_NE(system_error(other).find("model 'queueing' has no edges"), std::string::npos)
      << system_error(other);
}

TEST(SystemModel, AdmissionSlotsComeBackWhatEverBecomesOfTheRequest) {
  // Admission lets 5 in, the replica holds 2 (a worker and a queue of one): the 3 others are
  // rejected by the full queue, and each must give its slot back, or the limit would fill with
  // slots nobody holds and shed everything.
  const std::string text = R"toml(scenario = "admission"
model = "system"
[run]
duration = "20s"
[service.one]
workers = 1
queue = 1
limit = "concurrency(max=5)"
service_time = "exponential(mean=1ms)"
[[clients]]
to = "one"
arrivals = "poisson(rate=800)"
edge = "e"
[edge.e]
max_attempts = 1
[[strategy]]
name = "s"
[[strategy]]
name = "adaptive"
)toml";
  const auto r = system_run(text);
  EXPECT_GT(r.strategies.at(0).success_rate(), 0.5);
  // The library's adaptive limit, written bare: its defaults.
  const auto bare = system_run(replaced(text, "concurrency(max=5)", "adaptive"));
  EXPECT_GT(bare.strategies.at(0).success_rate(), 0.5);
}

TEST(SystemModel, ARampNamesBothEnds) {
  const std::string message =
      system_error(replaced(minimal_system, "poisson(rate=500)", "ramp(from=500, over=10s)"));
  EXPECT_NE(message.find("ramp needs from=, to= and over="), std::string::npos) << message;
}

// ---- hedging on an edge (gRPC A6, through the library's hedge controller) -------------------

// One user calling a service of three replicas whose every request takes 100 ms; the edge hedges
// every 10 ms, so each call sends all three copies.
const std::string hedged = R"toml(scenario = "hedged"
model = "system"
[run]
duration = "60s"
[service.one]
replicas = 3
balance = "random"
workers = 0
service_time = "constant(value=100ms)"
[[clients]]
to = "one"
arrivals = "closed(users=1)"
think = "1s"
operations = 50
latency = "1ms"
edge = "e"
[edge.e]
hedge = "hedge(max_attempts=3, delay=10ms)"
[[strategy]]
name = "hedge"
)toml";

TEST(SystemHedging, EachCopyGoesToAReplicaHoldingNoneOfItsCall) {
  // Each replica takes one connection: a copy sent where another copy of its call is held would
  // be refused (the random balancer alone would do so in 7 calls of 9).
  const auto r = system_run(replaced(hedged, "workers = 0", "workers = 0\nmax_connections = 1"));
  const auto& s = r.strategies.at(0);
  EXPECT_EQ(s.operations, 50u);
  EXPECT_EQ(s.completed, 50u);
  EXPECT_EQ(s.attempts_per_operation, 3.0);
  EXPECT_EQ(system_field(s, "services.one.rejected"), 0.0);
  EXPECT_EQ(system_field(s, "services.one.arrivals"), 50.0);  // first copies only
  EXPECT_EQ(system_field(s, "services.one.attempts"), 150.0);
}

TEST(SystemHedging, TheFirstSuccessWinsAndALateAnswerIsIgnored) {
  // No think time: the next call starts at once, in the slot of the one that just ended, while
  // its losers are still served (no cancellation). Their answers come 10 and 20 ms into the next
  // call: taken for its own, they would end it in 10 ms instead of 102.
  const auto r = system_run(replaced(hedged, "think = \"1s\"", "think = \"0s\""));
  const auto& s = r.strategies.at(0);
  EXPECT_EQ(s.completed, 50u);
  EXPECT_EQ(s.attempts_per_operation, 3.0);
  ASSERT_TRUE(s.latency_s);
  EXPECT_NEAR(s.latency_s->p50, 0.102, 0.001);  // the first copy's 100 ms and two 1 ms hops
  EXPECT_GE(s.latency_s->max, 0.1);
  // Every copy was served to the end, each counted once.
  EXPECT_EQ(system_field(s, "services.one.completed"), 150.0);
}

// A service that fails each request with 503 at `rate`, at once.
std::string failing_hedged(const std::string& rate, const std::string& hedge_spec) {
  return replaced(
      replaced(replaced(hedged, "service_time = \"constant(value=100ms)\"",
                        "service_time = \"0s\"\nerrors = { rate = " + rate + ", status = 503 }"),
               "think = \"1s\"", "think = \"0s\""),
      "hedge = \"hedge(max_attempts=3, delay=10ms)\"", hedge_spec);
}

TEST(SystemHedging, ANonFatalStatusSendsTheNextCopyAtOnceAndAFatalOneEndsTheCall) {
  // delay 1 s, but a copy that fails (half of them, non-fatally) answers after two 1 ms hops and
  // the next goes at once: a call succeeds in 2, 4 or 6 ms, never after a second.
  const auto r = system_run(
      failing_hedged("0.5", "hedge = \"hedge(max_attempts=3, delay=1s, non_fatal=[503])\""));
  const auto& s = r.strategies.at(0);
  EXPECT_GT(s.attempts_per_operation, 1.3);
  ASSERT_TRUE(s.latency_s);
  EXPECT_LT(s.latency_s->max, 0.0065);
  EXPECT_GT(s.latency_s->max, 0.0035);
  // 503 not among non_fatal: the first answer is fatal and the call ends with one copy.
  const auto fatal =
      system_run(failing_hedged("0.5", "hedge = \"hedge(max_attempts=3, delay=1s)\""));
  EXPECT_EQ(fatal.strategies.at(0).attempts_per_operation, 1.0);
  EXPECT_LT(fatal.strategies.at(0).success_rate(), 0.9);
}

TEST(SystemHedging, ABudgetStopsTheCopies) {
  // A6's throttle: each failed copy costs a token, and copies go only while more than half of
  // the 10 are left; without it every call sends its three.
  const std::string spec = "hedge = \"hedge(max_attempts=3, delay=1s, non_fatal=[503])\"";
  const std::string text = failing_hedged("1.0", spec) + R"toml([[strategy]]
name = "throttled"
edge.e.budget = "token-bucket(max=10, ratio=0.1)"
)toml";
  const auto r = system_run(text);
  EXPECT_EQ(r.strategies.at(0).attempts_per_operation, 3.0);
  EXPECT_LT(r.strategies.at(1).attempts_per_operation, 1.1);
  EXPECT_EQ(system_field(r.strategies.at(1), "services.one.arrivals"), 50.0);
}

TEST(SystemHedging, AServiceHedgesItsCallsDownstreamUntilTheirDeadline) {
  const std::string text = R"toml(scenario = "downstream"
model = "system"
[run]
duration = "10s"
[service.front]
workers = 0
calls = [{ to = "back", edge = "inner", latency = "1ms" }]
[service.back]
replicas = 2
workers = 0
service_time = "constant(value=50ms)"
[[clients]]
to = "front"
arrivals = "constant(rate=10)"
edge = "outer"
[edge.outer]
max_attempts = 1
[edge.inner]
hedge = "hedge(max_attempts=2, delay=10ms)"
deadline = "deadline(total=30ms)"
[[strategy]]
name = "cut"
[[strategy]]
name = "in-time"
edge.inner.deadline = "deadline(total=1s)"
)toml";
  const auto r = system_run(text);
  const auto& cut = r.strategies.at(0);
  const auto& in_time = r.strategies.at(1);
  const auto ops = static_cast<double>(cut.operations);
  // Both copies go (10 ms apart), whatever the deadline; at 30 ms the call ends, and the front's
  // request fails with it.
  EXPECT_EQ(cut.completed, 0u);
  EXPECT_EQ(system_field(cut, "services.back.arrivals"), ops);
  EXPECT_EQ(system_field(cut, "services.back.attempts"), 2 * ops);
  EXPECT_EQ(in_time.completed, in_time.operations);
  EXPECT_EQ(system_field(in_time, "services.back.attempts"),
            2 * static_cast<double>(in_time.operations));
  ASSERT_TRUE(in_time.latency_s);
  EXPECT_NEAR(in_time.latency_s->p50, 0.052, 0.001);  // the first copy's 50 ms and two hops
}

TEST(SystemHedging, BadHedgeInputIsOneLine) {
  const std::map<std::string, std::pair<std::string, std::string>> cases{
      {"too many copies", {"max_attempts=3, delay=10ms", "max_attempts=9, delay=10ms"}},
      {"beside max_attempts", {"[[strategy]]", "max_attempts = 2\n[[strategy]]"}},
      {"beside a limiter", {"[[strategy]]", "limiter = \"bulkhead(max=4)\"\n[[strategy]]"}},
  };
  const std::map<std::string, std::string> expected{
      {"too many copies", "hedge.toml:18:9: edge.e.hedge: bad hedge"},
      {"beside max_attempts", "max_attempts"},
      {"beside a limiter", "limiter"},
  };
  for (const auto& [what, edit] : cases) {
    std::string message;
    try {
      sim::scenario sc =
          sim::scenario::load({"hedge.toml", replaced(hedged, edit.first, edit.second)});
      sim::run_scenario(sc, {});
      message = "(no error)";
    } catch (const sim::scenario_error& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(expected.at(what)), std::string::npos) << what << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << what;
  }
}

// ---- the tail distribution ------------------------------------------------------------------

TEST(SystemModel, ATailDrawsItsStepsAsQuantilesOverItsBase) {
  const std::string text =
      replaced(replaced(minimal_system, "workers = 4", "workers = 0"),
               "service_time = \"exponential(mean=2ms)\"",
               "service_time = { kind = \"tail\", base = \"constant\", value = \"1ms\", "
               "at1 = \"90%\", time1 = \"20ms\", at2 = 0.98, time2 = \"50ms\" }");
  const auto r = system_run(text, {"run.duration=\"10s\""});
  const auto& s = r.strategies.at(0);
  EXPECT_NEAR(system_field(s, "services.db.latency_s.p50"), 0.001, 0.00005);
  EXPECT_NEAR(system_field(s, "services.db.latency_s.p95"), 0.020, 0.0005);
  EXPECT_NEAR(system_field(s, "services.db.latency_s.p99"), 0.050, 0.002);
  // Each number is a key of the table: --set reaches it.
  const auto moved = system_run(text, {"run.duration=\"10s\"", "service.db.service_time.at1=0.96"});
  EXPECT_NEAR(system_field(moved.strategies.at(0), "services.db.latency_s.p95"), 0.001, 0.00005);
}

TEST(SystemModel, BadTailInputIsOneLineWithItsPlace) {
  const std::string tail = "tail(base=0s, at1=90%, time1=2s, at2=95%, time2=5s)";
  const std::map<std::string, std::pair<std::string, std::string>> cases{
      {"not ascending", {"at2=95%", "at2=85%"}},
      {"above 100 %", {"at2=95%", "at2=105%"}},
      {"at 100 %", {"at2=95%", "at2=100%"}},
      {"a time alone", {", at2=95%", ""}},
      {"a gap", {"at2=95%, time2=5s", "at3=95%, time3=5s"}},
      {"no base", {"base=0s, ", ""}},
      {"base keys beside a duration", {"base=0s", "base=0s, sigma=2"}},
      {"a base kind's bad key", {"base=0s", "base=lognormal, median=4ms, sigm=2"}},
      {"no steps", {", at1=90%, time1=2s, at2=95%, time2=5s", ""}},
  };
  const std::map<std::string, std::string> expected{
      {"not ascending", "at2=85% must be above at1=90% (the quantiles ascend)"},
      {"above 100 %", "at2=105% must be between 0% and 100%"},
      {"at 100 %", "at2 must be above 0% and below 100%"},
      {"a time alone", "at2 and time2 go together"},
      {"a gap", "steps are numbered from 1 without a gap: at3 without at2"},
      {"no base", "tail needs base="},
      {"base keys beside a duration", "base=0s is a duration, so tail takes no sigma=2"},
      {"a base kind's bad key", "lognormal takes no 'sigm' (did you mean 'sigma'?)"},
      {"no steps", "tail needs at least one step"},
  };
  const std::string with_tail =
      replaced(minimal_system, "\"exponential(mean=2ms)\"", "\"" + tail + "\"");
  for (const auto& [what, edit] : cases) {
    const std::string message = system_error(replaced(with_tail, edit.first, edit.second));
    EXPECT_NE(message.find("mine.toml:18:16: service.db.service_time: "), std::string::npos)
        << what << ": " << message;
    EXPECT_NE(message.find(expected.at(what)), std::string::npos) << what << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << what;
  }
}

// One service, every request failed by `fault`, clients at a constant 500/s for 2 s.
std::string failing_system(const std::string& service_keys, const std::string& fault,
                           const std::string& front = "max_attempts = 1") {
  return R"toml(scenario = "failing"
model = "system"
seed = 1

[run]
duration = "2s"

[service.api]
)toml" + service_keys +
         R"toml(
faults = [{ at = "0s", fault = ")toml" +
         fault + R"toml(" }]

[[clients]]
to = "api"
arrivals = "constant(rate=500)"
edge = "front"

[edge.front]
policy = "none"
)toml" + front +
         R"toml(

[[strategy]]
name = "as-is"
)toml";
}

TEST(SystemModel, AFailureDecidedAfterTheWorkCostsTheWork) {
  // 10 ms of work at 500/s with no worker limit: five requests held at a time (Little's law)
  // when the failure comes at the end of the work; none held when it comes on arrival.
  const std::string keys =
      "workers = 0\nservice_time = \"constant(value=10ms)\"\nfaults_decided = \"after-work\"";
  const auto after = system_run(failing_system(keys, "outage()")).strategies.at(0);
  EXPECT_EQ(after.completed, 0u);
  EXPECT_EQ(system_field(after, "services.api.failed"), static_cast<double>(after.operations));
  EXPECT_GE(system_field(after, "services.api.peak_in_flight"), 5.0);
  const auto on_arrival =
      system_run(failing_system(replaced(keys, "after-work", "on-arrival"), "outage()"))
          .strategies.at(0);
  EXPECT_EQ(on_arrival.completed, 0u);
  EXPECT_LE(system_field(on_arrival, "services.api.peak_in_flight"), 1.0);
}

TEST(SystemModel, APerKeyOutageFailsTheSameOperationsOnEveryRetry) {
  // 30 % of the keys down: an operation's retries carry its key, so four attempts save none of
  // them (success 0.7, 1 + 0.3 * 3 attempts); by call, four attempts fail together 0.3^4 of the
  // time. 1000 operations: 0.7 +- 0.03 is over 2 sigma (sigma ~ 0.0145).
  const std::string keys = "workers = 0";
  const auto by_key =
      system_run(failing_system(keys, "outage(keys=30%)", "max_attempts = 4")).strategies.at(0);
  EXPECT_NEAR(by_key.success_rate(), 0.7, 0.03);
  EXPECT_NEAR(by_key.attempts_per_operation, 1.9, 0.1);
  const auto by_call =
      system_run(failing_system(keys, "outage(rate=30%)", "max_attempts = 4")).strategies.at(0);
  EXPECT_GT(by_call.success_rate(), 0.98);
}

TEST(SystemModel, SpareCapacitySizesTheWorkersFromTheOfferedLoad) {
  // An arrival every 2 ms, 9 ms of work: 4.5 workers' worth. spare_capacity 0.5 gives
  // int(2.25) = 2 workers, which with no queue serve two arrivals in five; spare 1.2 gives
  // int(5.4) = 5, which serve them all.
  const auto served = [](const std::string& spare) {
    return system_run(failing_system("spare_capacity = " + spare +
                                         "\nqueue = 0\nservice_time = \"constant(value=9ms)\"",
                                     "errors(rate=0%)"))
        .strategies.at(0)
        .success_rate();
  };
  EXPECT_NEAR(served("0.5"), 0.4, 0.01);
  EXPECT_EQ(served("1.2"), 1.0);
}

TEST(SystemModel, WorkWhoseDeadlinePassesInServiceStopsAtItsCheckpoint) {
  // A propagated 4 ms deadline and 10 ms of work, an arrival every 7.1 ms, one worker: with
  // check_cost 0.2 each request stops at 4 + 2 ms and fails, so none waits; without it, each
  // runs its 10 ms (and answers a success nobody waits for), so the next one waits.
  const std::string keys =
      "workers = 1\nservice_time = \"constant(value=10ms)\"\nexpired_cost = \"5%\"";
  const std::string front =
      "max_attempts = 1\ndeadline = \"deadline(per_attempt=4ms, propagate=true)\"";
  const auto run = [&](const std::string& extra) {
    std::string text = failing_system(keys + extra, "errors(rate=0%)", front);
    text = replaced(text, "constant(rate=500)", "constant(rate=140)");
    return system_run(text).strategies.at(0);
  };
  const auto checked = run("\ncheck_cost = 0.2");
  EXPECT_EQ(system_field(checked, "services.api.completed"), 0.0);
  EXPECT_EQ(system_field(checked, "services.api.failed"), static_cast<double>(checked.operations));
  EXPECT_LE(system_field(checked, "services.api.peak_in_flight"), 1.0);
  const auto unchecked = run("");
  EXPECT_GT(system_field(unchecked, "services.api.completed"), 0.0);
  EXPECT_GE(system_field(unchecked, "services.api.peak_in_flight"), 2.0);
}

TEST(SystemModel, TheNewServiceKeysRefuseBadInputInOneLine) {
  const std::map<std::string, std::pair<std::string, std::string>> cases{
      {"decided", {"workers = 0", "workers = 0\nfaults_decided = \"after-wrok\""}},
      {"both", {"workers = 0", "workers = 0\nspare_capacity = 2"}},
      {"share", {"workers = 0", "workers = 0\nexpired_cost = \"120%\""}},
      {"check", {"workers = 0", "workers = 0\ncheck_cost = 2"}},
      {"closed", {"constant(rate=500)", "closed(users=5)"}},
  };
  const std::map<std::string, std::string> expected{
      {"decided",
       "failing.toml:10:18: service.api.faults_decided: 'after-wrok' is none of on-arrival, "
       "after-work (did you mean 'after-work'?)"},
      {"both", "failing.toml:10:18: service.api.spare_capacity: give workers or spare_capacity"},
      {"share",
       "failing.toml:10:16: service.api.expired_cost: a share of the work is a percentage"},
      {"check", "failing.toml:10:14: service.api.check_cost: 2 is out of range"},
      {"closed", "service.api.spare_capacity: sizes from the rate of the open groups"},
  };
  for (const auto& [what, edit] : cases) {
    std::string text = failing_system("workers = 0", "outage()");
    if (what == "closed") text = replaced(text, "workers = 0", "spare_capacity = 2");
    std::string message;
    try {
      sim::scenario sc =
          sim::scenario::load({"failing.toml", replaced(text, edit.first, edit.second)}, {});
      sim::run_scenario(sc, {});
    } catch (const sim::scenario_error& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(expected.at(what)), std::string::npos) << what << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << what;
  }
}

}  // namespace system_model_test
