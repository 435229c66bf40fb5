// SPDX-License-Identifier: Apache-2.0
// The fault plan of serve and proxy without I/O (src/faults): specs and flags parse to what
// they say and refuse what they cannot mean; decisions follow the windows, the order (outage,
// then delays, then an abort) and the rates, on virtual time with fixed seeds and statistical
// bounds; schedule files parse and name the place of a mistake.
#include "faults/faults.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "backoff/error.hpp"
#include "scratch.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::parse_error;
using backoff::random_generator;
using namespace backoff::faults;

fault_plan plan_of(std::initializer_list<scheduled_fault> faults) {
  fault_plan p;
  p.faults = faults;
  return p;
}

scheduled_fault always(const std::string& spec) {
  return {{}, parse_fault(spec)};
}

// A request with these headers (names in lower case, as the lookup asks for them).
struct fake_request {
  std::string path = "/api";
  std::map<std::string, std::string> headers;
  request_view view() const {
    return {path, [this](std::string_view name) {
              const auto it = headers.find(std::string(name));
              return it == headers.end() ? std::string_view{} : std::string_view(it->second);
            }};
  }
};

std::string parse_message(const std::string& spec) {
  try {
    parse_fault(spec);
  } catch (const parse_error& e) {
    return e.what();
  }
  return "";
}

TEST(FaultSpec, EachKindParsesToItsCanonicalText) {
  EXPECT_EQ(parse_fault("errors(rate=5%, status=503)").spec, "errors(status=503, rate=5%)");
  EXPECT_EQ(parse_fault("errors").spec, "errors(status=503, rate=100%)");
  EXPECT_EQ(parse_fault("latency(delay=100ms)").spec,
            "latency(distribution=fixed, delay=100ms, rate=100%)");
  EXPECT_EQ(parse_fault("latency(distribution=lognormal, median=20ms, sigma=0.5, rate=0.1)").spec,
            "latency(distribution=lognormal, median=20ms, sigma=0.5, rate=10%)");
  EXPECT_EQ(parse_fault("partial(header=X-Shard, value=[3, 7], status=500)").spec,
            "partial(header=x-shard, value=[3, 7], status=500, rate=100%)");
  EXPECT_EQ(parse_fault("partial(path=/api/users/42)").spec,
            "partial(path=/api/users/42, status=503, rate=100%)");
  EXPECT_EQ(parse_fault("outage(action=reset)").spec, "outage(action=reset, rate=100%)");
  EXPECT_EQ(parse_fault("slow_body(size=16KiB, speed=4KiB/s)").spec,
            "slow_body(size=16KiB, speed=4096B/s, rate=100%)");
  const fault f = parse_fault("latency(distribution=uniform, lo=10ms, hi=50ms)");
  EXPECT_EQ(f.distribution, latency_distribution::uniform);
  EXPECT_EQ(f.a, 10ms);
  EXPECT_EQ(f.b, 50ms);
}

TEST(FaultSpec, MistakesAreOneLineNamingTheBadPart) {
  EXPECT_NE(parse_message("crash(rate=5%)").find("unknown fault 'crash'"), std::string::npos);
  EXPECT_NE(parse_message("errors(delay=5ms)").find("'delay' does not apply to errors"),
            std::string::npos);
  EXPECT_NE(parse_message("errors(status=99)").find("from 200 to 599"), std::string::npos);
  EXPECT_NE(parse_message("errors(status=600)").find("from 200 to 599"), std::string::npos);
  EXPECT_NE(parse_message("errors(rate=150%)").find("rate"), std::string::npos);
  EXPECT_NE(parse_message("latency(mean=50ms)").find("missing 'delay'"), std::string::npos);
  EXPECT_NE(parse_message("latency(distribution=exponential, delay=5ms)").find("missing 'mean'"),
            std::string::npos);
  EXPECT_NE(parse_message("latency(distribution=exponential, mean=5ms, lo=1ms)")
                .find("'lo' does not apply to exponential latency"),
            std::string::npos);
  EXPECT_NE(parse_message("latency(distribution=uniform, lo=50ms, hi=10ms)").find("below"),
            std::string::npos);
  EXPECT_NE(parse_message("latency(distribution=gamma, mean=5ms)").find("'distribution'"),
            std::string::npos);
  EXPECT_NE(parse_message("latency(delay=25h)").find("24h"), std::string::npos);
  EXPECT_NE(parse_message("partial(status=503)").find("either 'header'"), std::string::npos);
  EXPECT_NE(parse_message("partial(header=x, path=/a)").find("either 'header'"), std::string::npos);
  EXPECT_NE(parse_message("partial(header=x)").find("missing 'value'"), std::string::npos);
  EXPECT_NE(parse_message("partial(header=x y, value=1)").find("header name"), std::string::npos);
  EXPECT_NE(parse_message("partial(path=api)").find("start with '/'"), std::string::npos);
  EXPECT_NE(parse_message("outage(action=reset, status=503)").find("action=status only"),
            std::string::npos);
  EXPECT_NE(parse_message("outage(action=explode)").find("status, reset, hang or pause"),
            std::string::npos);
  EXPECT_NE(parse_message("outage(action=pause, rate=50%)").find("stops the whole server"),
            std::string::npos);
  EXPECT_NE(parse_message("slow_body(size=0, speed=1KiB/s)").find("'size'"), std::string::npos);
  EXPECT_NE(parse_message("slow_body(size=2GiB, speed=1KiB/s)").find("'size'"), std::string::npos);
  EXPECT_NE(parse_message("slow_body(size=1KiB, speed=1KiB)").find("'speed'"), std::string::npos);
  EXPECT_NE(parse_message("slow_body(size=1KiB)").find("missing 'speed'"), std::string::npos);
  // One line, whatever the input holds.
  EXPECT_EQ(parse_message("errors(status=5\n03)").find('\n'), std::string::npos);
}

TEST(FaultFlags, ShorthandsMeanTheirSpecs) {
  EXPECT_EQ(parse_errors_flag("5%:503").spec, "errors(status=503, rate=5%)");
  EXPECT_EQ(parse_errors_flag("0.5").spec, "errors(status=503, rate=50%)");
  EXPECT_EQ(parse_errors_flag("1%:429").status, 429);
  EXPECT_THROW(parse_errors_flag("5%:abc"), parse_error);
  EXPECT_THROW(parse_errors_flag("lots"), parse_error);
  EXPECT_EQ(parse_latency_flag("100ms").a, 100ms);
  EXPECT_EQ(parse_latency_flag("exponential(mean=50ms)").spec,
            "latency(distribution=exponential, mean=50ms, rate=100%)");
  EXPECT_EQ(parse_latency_flag("pareto(scale=10ms, shape=1.5, rate=10%)").rate, 0.1);
  EXPECT_THROW(parse_latency_flag("soon"), parse_error);
  EXPECT_THROW(parse_latency_flag("exponential(mean=50ms"), parse_error);
  EXPECT_EQ(parse_partial_flag("header=x-user, value=alice").values,
            std::vector<std::string>{"alice"});
  const scheduled_fault o = parse_outage_flag("10s+5s:reset");
  EXPECT_EQ(o.when.start, 10s);
  EXPECT_EQ(o.when.end, 15s);
  EXPECT_EQ(o.what.action, outage_action::reset);
  EXPECT_EQ(parse_outage_flag("1m+30s").what.status, 503);
  EXPECT_EQ(parse_outage_flag("0s+1s:hang").what.action, outage_action::hang);
  EXPECT_EQ(parse_outage_flag("0s+1s:pause").what.action, outage_action::pause);
  EXPECT_EQ(parse_outage_flag("0s+1s:500").what.status, 500);
  EXPECT_THROW(parse_outage_flag("10s"), parse_error);
  EXPECT_THROW(parse_outage_flag("10s+0s"), parse_error);
  EXPECT_THROW(parse_outage_flag("10s+5s:later"), parse_error);
  EXPECT_EQ(parse_slow_body_flag("1MiB@64KiB/s").body_size, 1024u * 1024u);
  EXPECT_THROW(parse_slow_body_flag("1MiB"), parse_error);
}

TEST(FaultDecision, AnEmptyPlanDoesNothingAndDrawsNothing) {
  random_generator rng{1}, untouched{1};
  const fake_request r;
  const fault_decision d = decide({}, 5s, r.view(), rng);
  EXPECT_FALSE(d.any());
  EXPECT_FALSE(d.abort_status);
  EXPECT_EQ(d.delay, 0ns);
  EXPECT_EQ(rng(), untouched());
}

TEST(FaultDecision, AnErrorRateFailsThatShareOfRequests) {
  // Binomial: n = 200000 at p = 5 %, sd = 0.00049; the bound is 8 sd.
  const fault_plan plan = plan_of({always("errors(rate=5%, status=503)")});
  random_generator rng{42};
  const fake_request r;
  int failed = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const fault_decision d = decide(plan, 1s, r.view(), rng);
    if (d.abort_status) {
      EXPECT_EQ(*d.abort_status, 503);
      EXPECT_EQ(d.fired, 1u << counter_errors);
      ++failed;
    }
  }
  EXPECT_NEAR(static_cast<double>(failed) / n, 0.05, 0.004);
}

TEST(FaultDecision, TheSameSeedGivesTheSameDecisions) {
  const fault_plan plan =
      plan_of({always("errors(rate=30%)"), always("latency(distribution=exponential, mean=10ms)")});
  const fake_request r;
  random_generator a{7}, b{7}, c{8};
  bool differs_from_other_seed = false;
  for (int i = 0; i < 1000; ++i) {
    const fault_decision x = decide(plan, 0s, r.view(), a);
    const fault_decision y = decide(plan, 0s, r.view(), b);
    const fault_decision z = decide(plan, 0s, r.view(), c);
    EXPECT_EQ(x.abort_status, y.abort_status);
    EXPECT_EQ(x.delay, y.delay);
    differs_from_other_seed |= x.delay != z.delay;
  }
  EXPECT_TRUE(differs_from_other_seed);
}

TEST(FaultDecision, AWindowIsOnFromItsStartUntilJustBeforeItsEnd) {
  const fault_plan plan = plan_of({parse_outage_flag("10s+5s:503")});
  random_generator rng{1};
  const fake_request r;
  EXPECT_FALSE(decide(plan, 10s - 1ns, r.view(), rng).abort_status);
  EXPECT_EQ(decide(plan, 10s, r.view(), rng).abort_status, 503);
  EXPECT_EQ(decide(plan, 15s - 1ns, r.view(), rng).abort_status, 503);
  EXPECT_FALSE(decide(plan, 15s, r.view(), rng).abort_status);
}

TEST(FaultDecision, AnOutageResetsHangsOrAnswersAtOnceWithoutAddedLatency) {
  random_generator rng{1};
  const fake_request r;
  const auto with_latency = [](scheduled_fault outage) {
    return plan_of({always("latency(delay=1s)"), outage, always("errors(rate=100%, status=500)")});
  };
  const fault_decision reset =
      decide(with_latency(parse_outage_flag("0s+1m:reset")), 1s, r.view(), rng);
  EXPECT_TRUE(reset.reset);
  EXPECT_EQ(reset.delay, 0ns);
  EXPECT_EQ(reset.fired, 1u << counter_outage);
  const fault_decision hang =
      decide(with_latency(parse_outage_flag("5s+10s:hang")), 6s, r.view(), rng);
  EXPECT_EQ(hang.hold_until, 15s);
  EXPECT_FALSE(hang.abort_status);
  // A pause holds what arrives as a hang does, and answers ready meanwhile until it ends.
  const fault_plan pause = with_latency(parse_outage_flag("5s+10s:pause"));
  const fault_decision paused = decide(pause, 6s, r.view(), rng);
  EXPECT_EQ(paused.hold_until, 15s);
  EXPECT_FALSE(paused.abort_status);
  EXPECT_EQ(paused_until(pause, 5s), 15s);
  EXPECT_EQ(paused_until(pause, 15s), std::nullopt);
  EXPECT_EQ(paused_until(pause, 4s), std::nullopt);
  EXPECT_EQ(paused_until(with_latency(parse_outage_flag("5s+10s:hang")), 6s), std::nullopt);
  const fault_decision down = decide(with_latency(parse_outage_flag("0s+1m")), 1s, r.view(), rng);
  EXPECT_EQ(down.abort_status, 503);
  EXPECT_EQ(down.delay, 0ns);
  // Outside the window: the latency, then the error.
  const fault_decision after =
      decide(with_latency(parse_outage_flag("0s+1m")), 2min, r.view(), rng);
  EXPECT_EQ(after.delay, 1s);
  EXPECT_EQ(after.abort_status, 500);
  EXPECT_EQ(after.fired, (1u << counter_latency) | (1u << counter_errors));
}

TEST(FaultDecision, APartialOutageFailsOnlyItsKey) {
  const fault_plan plan = plan_of({always("partial(header=x-shard, value=[3, 7], status=500)"),
                                   always("partial(path=/api/users/42)")});
  random_generator rng{1};
  fake_request r;
  EXPECT_FALSE(decide(plan, 0s, r.view(), rng).any());
  r.headers["x-shard"] = "3";
  EXPECT_EQ(decide(plan, 0s, r.view(), rng).abort_status, 500);
  r.headers["x-shard"] = "7";
  EXPECT_EQ(decide(plan, 0s, r.view(), rng).fired, 1u << counter_partial);
  r.headers["x-shard"] = "30";  // values compare whole
  EXPECT_FALSE(decide(plan, 0s, r.view(), rng).any());
  r.path = "/api/users/42/orders";
  EXPECT_EQ(decide(plan, 0s, r.view(), rng).abort_status, 503);
  r.path = "/api/users/4";
  EXPECT_FALSE(decide(plan, 0s, r.view(), rng).any());
}

TEST(FaultSpec, AKeyedOutageNamesItsShareAndHeader) {
  EXPECT_EQ(parse_fault("outage(keys=30%)").spec, "outage(status=503, keys=30%, rate=100%)");
  EXPECT_EQ(parse_fault("outage(keys=0.3, key_header=X-User)").spec,
            "outage(status=503, keys=30%, key_header=x-user, rate=100%)");
  EXPECT_NE(
      parse_message("outage(key_header=x-user)").find("'key_header' applies with 'keys' only"),
      std::string::npos);
  EXPECT_NE(
      parse_message("outage(keys=30%, key_header=x user)").find("'key_header' must be a header"),
      std::string::npos);
  EXPECT_NE(parse_message("errors(keys=30%)").find("'keys' does not apply to errors"),
            std::string::npos);
}

TEST(FaultDecision, AKeyedOutageFailsTheSameKeysEveryTimeAndSparesTheRest) {
  const fault_plan plan = plan_of({always("outage(keys=30%, key_header=x-user)")});
  random_generator rng{1};
  fake_request r;
  EXPECT_FALSE(decide(plan, 0s, r.view(), rng).any());  // no key: spared
  const auto fails = [&](const std::string& key) {
    r.headers["x-user"] = key;
    return decide(plan, 0s, r.view(), rng).abort_status.has_value();
  };
  // A number mod 1000 below 300 fails, whatever the draws: no random number is used.
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(fails("0"));
    EXPECT_TRUE(fails("299"));
    EXPECT_TRUE(fails("1299"));
    EXPECT_FALSE(fails("300"));
    EXPECT_FALSE(fails("999"));
  }
  // Other text is hashed: each key always the same way, and about 30 % of them down.
  int down = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "user-" + std::to_string(i);
    const bool first = fails(key);
    EXPECT_EQ(fails(key), first) << key;
    down += first;
  }
  EXPECT_NEAR(down / 2000.0, 0.3, 0.04);  // binomial sigma ~ 0.01
  // rate= thins the keys that are down, per request.
  const fault_plan thinned = plan_of({always("outage(keys=100%, rate=50%)")});
  r.headers["x-backoff-key"] = "5";
  int hit = 0;
  for (int i = 0; i < 2000; ++i) hit += decide(thinned, 0s, r.view(), rng).any();
  EXPECT_NEAR(hit / 2000.0, 0.5, 0.04);
}

TEST(FaultSpec, AFadingErrorNamesItsFade) {
  EXPECT_EQ(parse_fault("errors(rate=90%, fade=2s)").spec, "errors(status=503, fade=2s, rate=90%)");
  EXPECT_NE(parse_message("errors(fade=0s)").find("'fade' must be above 0s"), std::string::npos);
  EXPECT_NE(parse_message("errors(fade=25h)").find("at most 24h"), std::string::npos);
  EXPECT_NE(parse_message("outage(fade=1s)").find("'fade' does not apply to outage"),
            std::string::npos);
}

TEST(FaultDecision, AFadingErrorFailsRetriesLessTheLaterTheyCome) {
  // rate 80 % fading over 2 s: a first attempt (no header, or 0 ms) fails 80 % of the time, a
  // retry 500 ms after it 60 %, one 1.5 s after 20 %, and from 2 s on never. Binomial with
  // n = 20000: sd at most 0.0035; the bound is 6 sd.
  const fault_plan plan = plan_of({always("errors(rate=80%, fade=2s)")});
  random_generator rng{7};
  fake_request r;
  const auto share = [&](const char* since) {
    if (since == nullptr) {
      r.headers.erase(std::string(since_first_attempt_header));
    } else {
      r.headers[std::string(since_first_attempt_header)] = since;
    }
    int failed = 0;
    for (int i = 0; i < 20000; ++i) failed += decide(plan, 0s, r.view(), rng).abort_status ? 1 : 0;
    return failed / 20000.0;
  };
  EXPECT_NEAR(share(nullptr), 0.8, 0.02);
  EXPECT_NEAR(share("0"), 0.8, 0.02);
  EXPECT_NEAR(share("500"), 0.6, 0.02);
  EXPECT_NEAR(share("1500.5"), 0.2, 0.02);
  EXPECT_EQ(share("2000"), 0.0);
  EXPECT_EQ(share("86400000"), 0.0);
  // Not a number of milliseconds from 0: taken as a first attempt.
  EXPECT_NEAR(share("-5"), 0.8, 0.02);
  EXPECT_NEAR(share("soon"), 0.8, 0.02);
  // Without fade the header changes nothing.
  const fault_plan steady = plan_of({always("errors(rate=80%)")});
  r.headers[std::string(since_first_attempt_header)] = "5000";
  int failed = 0;
  for (int i = 0; i < 20000; ++i) failed += decide(steady, 0s, r.view(), rng).abort_status ? 1 : 0;
  EXPECT_NEAR(failed / 20000.0, 0.8, 0.02);
}

TEST(FaultSpec, CapacityAndColdStartNameTheirKeys) {
  EXPECT_EQ(parse_fault("capacity(share=0.25)").spec, "capacity(share=25%, rate=100%)");
  EXPECT_EQ(parse_fault("cold_start(factor=4, half_life=10s, rate=30%)").spec,
            "cold_start(factor=4, half_life=10s, rate=30%)");
  EXPECT_NE(parse_message("capacity()").find("missing 'share'"), std::string::npos);
  EXPECT_NE(parse_message("capacity(share=0%)").find("'share' must be above 0%"),
            std::string::npos);
  EXPECT_NE(parse_message("capacity(share=50%, rate=50%)").find("'rate' must be 100%"),
            std::string::npos);
  EXPECT_NE(parse_message("cold_start(factor=0.5, half_life=1s)").find("from 1 to 1000"),
            std::string::npos);
  EXPECT_NE(parse_message("cold_start(factor=2)").find("missing 'half_life'"), std::string::npos);
  EXPECT_NE(parse_message("cold_start(factor=2, half_life=0s)").find("'half_life' must be above"),
            std::string::npos);
}

TEST(FaultDecision, ACapacityDropHoldsItsShareOnlyInItsWindow) {
  fault_plan plan = plan_of({});
  plan.faults.push_back({{2s, 5s}, parse_fault("capacity(share=50%)")});
  plan.faults.push_back({{4s, 6s}, parse_fault("capacity(share=50%)")});
  EXPECT_EQ(capacity_share(plan, 1s), 1.0);
  EXPECT_EQ(capacity_share(plan, 2s), 0.5);
  EXPECT_EQ(capacity_share(plan, 4s), 0.25);  // both: the shares multiply
  EXPECT_EQ(capacity_share(plan, 5s), 0.5);
  EXPECT_EQ(capacity_share(plan, 6s), 1.0);
  // No request is failed or delayed by it, and no random number is drawn.
  random_generator rng{3}, untouched{3};
  EXPECT_FALSE(decide(plan, 4s, fake_request{}.view(), rng).any());
  EXPECT_EQ(rng(), untouched());
  EXPECT_NE(network_refusal(plan).value_or("").find("capacity(share=50%"), std::string::npos);
  EXPECT_FALSE(network_refusal(plan_of({always("errors(rate=5%)")})).has_value());
}

TEST(FaultDecision, AColdStartSlowsWorkLessAndLessAfterItsStart) {
  fault_plan plan = plan_of({});
  plan.faults.push_back(
      {{10s, duration::max()}, parse_fault("cold_start(factor=5, half_life=2s)")});
  random_generator rng{5};
  const fake_request r;
  EXPECT_EQ(decide(plan, 9s, r.view(), rng).slowdown, 1.0);
  EXPECT_DOUBLE_EQ(decide(plan, 10s, r.view(), rng).slowdown, 5.0);
  EXPECT_DOUBLE_EQ(decide(plan, 12s, r.view(), rng).slowdown, 3.0);  // 1 + 4 / 2
  EXPECT_DOUBLE_EQ(decide(plan, 14s, r.view(), rng).slowdown, 2.0);  // 1 + 4 / 4
  EXPECT_EQ(decide(plan, 12s, r.view(), rng).fired, 1u << counter_cold_start);
  // rate= slows that share of the requests (the cold paths); binomial sd 0.01, bound 4 sd.
  const fault_plan some = plan_of({always("cold_start(factor=2, half_life=1h, rate=30%)")});
  int slowed = 0;
  for (int i = 0; i < 2000; ++i) slowed += decide(some, 0s, r.view(), rng).slowdown > 1.5;
  EXPECT_NEAR(slowed / 2000.0, 0.3, 0.04);
}

TEST(FaultDecision, LatencyDistributionsHaveTheirMeansAndBounds) {
  const fake_request r;
  const auto mean_ms = [&](const std::string& spec, double& lo, double& hi) {
    const fault_plan plan = plan_of({always(spec)});
    random_generator rng{3};
    double sum = 0;
    lo = 1e300;
    hi = 0;
    const int n = 50000;
    for (int i = 0; i < n; ++i) {
      const double ms =
          std::chrono::duration<double, std::milli>(decide(plan, 0s, r.view(), rng).delay).count();
      sum += ms;
      lo = std::min(lo, ms);
      hi = std::max(hi, ms);
    }
    return sum / n;
  };
  double lo = 0, hi = 0;
  // Exponential, mean 20 ms: the sample mean's sd is 20 / sqrt(50000) = 0.09 ms.
  EXPECT_NEAR(mean_ms("latency(distribution=exponential, mean=20ms)", lo, hi), 20.0, 0.6);
  EXPECT_GE(lo, 0.0);
  // Uniform on [10, 50) ms: mean 30, sd of the mean 0.05 ms.
  EXPECT_NEAR(mean_ms("latency(distribution=uniform, lo=10ms, hi=50ms)", lo, hi), 30.0, 0.4);
  EXPECT_GE(lo, 10.0);
  EXPECT_LT(hi, 50.0);
  // Lognormal, median 20 ms, sigma 0.5: mean 20 e^(0.125) = 22.66 ms.
  EXPECT_NEAR(mean_ms("latency(distribution=lognormal, median=20ms, sigma=0.5)", lo, hi), 22.66,
              0.5);
  // Pareto, scale 10 ms, shape 3: mean 15 ms, never below the scale.
  EXPECT_NEAR(mean_ms("latency(distribution=pareto, scale=10ms, shape=3)", lo, hi), 15.0, 0.5);
  EXPECT_GE(lo, 10.0);
  // Fixed is fixed, and two latencies add up.
  EXPECT_NEAR(mean_ms("latency(delay=7ms)", lo, hi), 7.0, 1e-9);
  const fault_plan two = plan_of({always("latency(delay=7ms)"), always("latency(delay=3ms)")});
  random_generator rng{1};
  EXPECT_EQ(decide(two, 0s, r.view(), rng).delay, 10ms);
}

TEST(FaultDecision, EnvoyHeadersActOnlyWhenEnabled) {
  fake_request r;
  r.headers["x-envoy-fault-abort-request"] = "429";
  r.headers["x-envoy-fault-delay-request"] = "250";
  fault_plan plan;
  random_generator rng{1};
  EXPECT_FALSE(decide(plan, 0s, r.view(), rng).any());
  plan.envoy_headers = true;
  const fault_decision d = decide(plan, 0s, r.view(), rng);
  EXPECT_EQ(d.abort_status, 429);
  EXPECT_EQ(d.delay, 250ms);
  EXPECT_EQ(d.fired, (1u << counter_envoy_abort) | (1u << counter_envoy_delay));
  // The envoy abort comes before the errors faults.
  plan.faults.push_back(always("errors(status=500)"));
  EXPECT_EQ(decide(plan, 0s, r.view(), rng).abort_status, 429);
}

TEST(FaultDecision, EnvoyPercentagesAndMalformedValues) {
  fault_plan plan;
  plan.envoy_headers = true;
  random_generator rng{5};
  fake_request r;
  r.headers["x-envoy-fault-abort-request"] = "503";
  r.headers["x-envoy-fault-abort-request-percentage"] = "0";
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(decide(plan, 0s, r.view(), rng).any());
  r.headers["x-envoy-fault-abort-request-percentage"] = "25";
  int aborted = 0;
  const int n = 40000;  // sd of the share 0.0022; bound 5 sd
  for (int i = 0; i < n; ++i) aborted += decide(plan, 0s, r.view(), rng).abort_status ? 1 : 0;
  EXPECT_NEAR(static_cast<double>(aborted) / n, 0.25, 0.011);
  // A malformed percentage is ignored (100 %), a status outside 200..599 or a malformed delay
  // ignores the header.
  r.headers["x-envoy-fault-abort-request-percentage"] = "lots";
  EXPECT_EQ(decide(plan, 0s, r.view(), rng).abort_status, 503);
  r.headers["x-envoy-fault-abort-request"] = "600";
  EXPECT_FALSE(decide(plan, 0s, r.view(), rng).any());
  r.headers["x-envoy-fault-abort-request"] = "50x";
  r.headers["x-envoy-fault-delay-request"] = "-5";
  EXPECT_FALSE(decide(plan, 0s, r.view(), rng).any());
  // A huge delay is capped at a day.
  r.headers["x-envoy-fault-delay-request"] = "99999999999999";
  EXPECT_EQ(decide(plan, 0s, r.view(), rng).delay, std::chrono::hours(24));
}

TEST(FaultDecision, ASlowBodyFiresOnlyForRequestsThatAreServed) {
  const fake_request r;
  random_generator rng{1};
  const fault_plan served = plan_of({always("slow_body(size=1KiB, speed=512B/s)")});
  const fault_decision d = decide(served, 0s, r.view(), rng);
  ASSERT_TRUE(d.slow);
  EXPECT_EQ(d.slow->size, 1024u);
  EXPECT_EQ(d.slow->bytes_per_s, 512.0);
  const fault_plan failed =
      plan_of({always("errors(status=500)"), always("slow_body(size=1KiB, speed=512B/s)")});
  EXPECT_FALSE(decide(failed, 0s, r.view(), rng).slow);
}

TEST(FaultSchedule, EntriesHaveATimeAFaultAndItsParameters) {
  const fault_plan plan = parse_fault_schedule(R"toml(
# an experiment
[[fault]]
at = "10s"
for = "5s"
fault = "errors(rate=50%, status=503)"

[[fault]]
fault = "latency(distribution=exponential, mean=20ms)"

[[fault]]
at = "1m"
until = "90s"
fault = "outage(action=reset)"
)toml",
                                               "faults.toml");
  ASSERT_EQ(plan.faults.size(), 3u);
  EXPECT_EQ(plan.faults[0].when.start, 10s);
  EXPECT_EQ(plan.faults[0].when.end, 15s);
  EXPECT_EQ(plan.faults[0].what.rate, 0.5);
  EXPECT_EQ(plan.faults[1].when.start, 0s);
  EXPECT_EQ(plan.faults[1].when.end, duration::max());
  EXPECT_EQ(plan.faults[2].when.end, 90s);
  EXPECT_EQ(describe(plan.faults[0]), "errors(status=503, rate=50%) from 10s to 15s");
  EXPECT_TRUE(parse_fault_schedule("", "empty.toml").empty());
}

std::string schedule_message(const std::string& text) {
  try {
    parse_fault_schedule(text, "f.toml");
  } catch (const fault_schedule_error& e) {
    return e.what();
  }
  return "";
}

TEST(FaultSchedule, MistakesNameTheFileLineAndColumn) {
  EXPECT_NE(schedule_message("[[fault]]\nat = \"1s\"\n").find("f.toml:1:1: a [[fault]] without"),
            std::string::npos);
  EXPECT_NE(schedule_message("[[fault]]\nfault = \"errors\"\nwhen = 3\n").find("f.toml:3:"),
            std::string::npos);
  EXPECT_NE(schedule_message("[[fault]]\nfault = \"errors\"\nat = 3\n").find("must be a string"),
            std::string::npos);
  EXPECT_NE(schedule_message("[[fault]]\nfault = \"errors\"\nat = \"soon\"\n").find("f.toml:3:"),
            std::string::npos);
  EXPECT_NE(schedule_message("[[fault]]\nfault = \"oops(\"\n").find("f.toml:2:"),
            std::string::npos);
  EXPECT_NE(schedule_message("[[fault]]\nfault = \"errors\"\nfor = \"1s\"\nuntil = \"2s\"\n")
                .find("not both"),
            std::string::npos);
  EXPECT_NE(schedule_message("[[fault]]\nfault = \"errors\"\nat = \"5s\"\nuntil = \"2s\"\n")
                .find("not after"),
            std::string::npos);
  EXPECT_NE(schedule_message("[[fault]]\nfault = \"errors\"\nfor = \"0s\"\n").find("more than 0"),
            std::string::npos);
  EXPECT_NE(schedule_message("faults = 3\n").find("unknown key 'faults'"), std::string::npos);
  EXPECT_NE(schedule_message("fault = 3\n").find("array of tables"), std::string::npos);
  EXPECT_NE(schedule_message("[[fault]\n").find("f.toml:1:"), std::string::npos);
  // One line, whatever bytes toml++ quotes back (found by the fault_schedule fuzzer).
  const std::string message = schedule_message(std::string("a = t\x01\x02\n", 8));
  ASSERT_FALSE(message.empty());
  for (const char c : message) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << message;
  // Nesting that would overflow toml++'s stack is refused before it parses.
  EXPECT_NE(schedule_message("x = " + std::string(100000, '[')).find("nested more than"),
            std::string::npos);
}

TEST(FaultSchedule, AFileIsReadUpTo1MiB) {
  const backoff::test::test_scratch dir("faults");
  const std::string ok = (dir / "ok.toml").string();
  std::ofstream(ok) << "[[fault]]\nfault = \"errors(rate=1%)\"\n";
  EXPECT_EQ(read_fault_schedule(ok).faults.size(), 1u);
  const std::string big = (dir / "big.toml").string();
  std::ofstream(big) << std::string(1100 * 1024, '#');
  EXPECT_THROW(read_fault_schedule(big), fault_schedule_error);
  EXPECT_THROW(read_fault_schedule((dir / "missing.toml").string()), fault_schedule_error);
  EXPECT_THROW(read_fault_schedule(dir.dir().string()), fault_schedule_error);
}

}  // namespace
