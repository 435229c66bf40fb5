// SPDX-License-Identifier: Apache-2.0
// `backoff load`: seed 004's client as a load generator. N virtual clients (closed loop: think
// Exp(--lambda), one request in flight each) or Poisson arrivals (--rate), a per-request timeout,
// and retries with any library strategy (--policy, -exponential-backoff, --aimd, --budget,
// --breaker, --hedge). Prints the seed's "OK: x req/sec, errors: y req/sec, timedout: z req/sec"
// and a line of operations and requests every --report-every, and writes the simulator's
// summary.json and timeseries.csv with --out (docs/NETWORK.md).
#include "net/client/load.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <type_traits>
#include <variant>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/strategy.hpp"
#include "commands.hpp"
#include "experiments/fault_experiment.hpp"
#include "experiments/outage_experiment.hpp"
#include "fault_flags.hpp"
#include "faults/faults.hpp"
#include "load_system.hpp"
#include "net/server/server.hpp"
#include "output.hpp"
#include "report/output_files.hpp"
#include "report/summary.hpp"
#include "report/text_table.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace {

struct load_flags {
  std::string url = "http://127.0.0.1:8070/api";
  std::uint32_t clients = 1000;
  duration lambda = std::chrono::seconds(10);
  std::string rate;
  std::string arrival = "poisson";
  std::string ramp;
  std::uint32_t max_in_flight = 10000;
  std::uint32_t connections = 100;
  std::optional<duration> deadline;
  std::optional<std::string> histogram_log;
  duration timeout = std::chrono::seconds(2);
  std::optional<duration> duration_total;
  duration report_every = std::chrono::seconds(5);
  std::optional<std::string> out;  // given empty is a mistake, not "no outputs"
  std::string policy;
  bool exponential = false;
  std::optional<duration> simple_delay;
  std::uint32_t max_attempts = 0;
  bool no_quirks = false;
  std::string aimd;
  std::string budget;
  std::string breaker;
  std::string throttle;
  std::string hedge;
  std::string limiter;
  std::string fallback;
  bool propagate_deadline = false;
  bool send_key = false;
  std::uint64_t seed = 1;
  std::string name;
  std::string experiment;
  duration pause_after = std::chrono::seconds(10);
  duration pause_for = std::chrono::seconds(10);
  bool url_given = false;
  bool pause_given = false;
};

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) {
  interrupted = true;
}

int exit_status() {
  return interrupted ? status_of_signal(SIGINT) : exit_ok;
}

// The flag behind each strategy key, for messages in the words the user typed.
std::string flag_of(const load_flags& f, std::string_view key) {
  if (key == "policy") {
    return f.exponential ? "--exponential-backoff"
                         : (f.simple_delay ? "--simple-backoff-delay" : "--policy");
  }
  if (key == "max_attempts") return "--max-attempts";
  if (key == "window") return "--aimd";
  return "--" + std::string(key);
}

// The strategy the flags describe, validated. The seed's client retries after 100 ms unless told
// otherwise (and a hedge, which replaces retrying, gets no such default). `name` receives the
// strategy's name for the outputs.
strategy load_strategy(const load_flags& f, std::string& name) {
  // The seed's client takes -simple-backoff-delay with -exponential-backoff and ignores the
  // delay (docs/NETWORK.md's walkthrough passes both): so does this one, and says so.
  const bool delay_ignored = f.exponential && f.simple_delay;
  const int choices =
      (f.exponential ? 1 : 0) + (f.policy.empty() ? 0 : 1) + (f.simple_delay && !delay_ignored);
  if (choices > 1) {
    throw parse_error("give one of --policy, --exponential-backoff and --simple-backoff-delay");
  }
  if (delay_ignored) {
    std::cerr << "backoff load: --simple-backoff-delay is ignored with --exponential-backoff, "
                 "as smira's Go client does\n";
  }
  strategy s;
  name = "fixed";
  if (f.exponential) {
    s.set("policy", "smira-go");
    name = "exponential";
  } else if (f.simple_delay) {
    s.policy = backoff_policy::constant(*f.simple_delay);
  } else if (!f.policy.empty()) {
    s.set("policy", f.policy);
    name = f.policy;
  } else if (f.hedge.empty()) {
    s.set("policy", "constant(initial=100ms)");
  }
  s.max_attempts = f.max_attempts;
  const std::pair<std::string_view, const std::string*> specs[] = {
      {"window", &f.aimd},       {"budget", &f.budget}, {"breaker", &f.breaker},
      {"throttle", &f.throttle}, {"hedge", &f.hedge},   {"limiter", &f.limiter},
      {"fallback", &f.fallback}};
  for (const auto& [key, text] : specs) {
    if (text->empty()) continue;
    try {
      s.set(key, *text);
    } catch (const parse_error& e) {
      throw parse_error(flag_of(f, key) + ": " + e.what());
    }
  }
  try {
    s.validate();
  } catch (const strategy_error& e) {
    // "--hedge replaces retrying (gRPC A6): give it no --policy": the rule names the key first.
    throw parse_error("--" + e.message([&f](std::string_view key) { return flag_of(f, key); }));
  }
  const guard_support can{
      .breaker = true, .hedge = true, .keys_why_not = "a run has one --url: drop keyed"};
  if (const auto refused = s.refusal(can)) {
    throw parse_error(flag_of(f, refused->key) + ": " + refused->why);
  }
  if (!f.name.empty()) name = f.name;
  return s;
}

// The load's options from the flags; throws parse_error naming the flag.
net::load_options load_options_of(const load_flags& f) {
  net::load_options o;
  o.target = net::parse_target(f.url);
  o.clients = f.clients;
  o.think_mean = f.lambda;
  if (!f.rate.empty() && !f.ramp.empty()) {
    throw parse_error("give --rate or --ramp, not both (a fixed rate is a ramp of one point)");
  }
  if (!f.rate.empty()) o.rate_per_s = net::parse_rate("--rate", f.rate, false);
  if (!f.ramp.empty()) o.ramp = net::parse_ramp(f.ramp);
  o.arrival = net::parse_arrival(f.arrival);
  o.max_in_flight = f.max_in_flight;
  o.connections = f.connections;
  o.request_deadline = f.deadline.value_or(duration{0});
  if (f.histogram_log && f.histogram_log->empty()) {
    throw parse_error("--histogram-log: needs a file");
  }
  o.timeout = f.timeout;
  // A ramp is as long as its points, unless --duration says otherwise.
  o.duration_total = f.duration_total.value_or(std::chrono::seconds(60));
  if (!o.ramp.empty() && !f.duration_total && o.ramp.back().at.count() > 0) {
    o.duration_total = o.ramp.back().at;
  }
  o.report_every = f.report_every;
  if (f.out && f.out->empty()) throw parse_error("--out: needs a folder");
  o.strategy = load_strategy(f, o.name);
  o.grow_from_think = !f.no_quirks;
  o.propagate_deadline = f.propagate_deadline;
  o.send_key = f.send_key;
  o.seed = f.seed;
  return o;
}

bool write_outputs(const std::string& dir, const report::scenario_result& result) {
  try {
    report::output_folder folder(dir);
    report::write_run_files(result, folder);
  } catch (const report::write_error& e) {
    std::cerr << "backoff load: " << e.what() << '\n';
    return false;
  }
  return true;
}

// The experiment's goodput per phase: before the pause, during it, after it (fixed retries show
// their pre-outage rate as "goodput" otherwise: completed / makespan hides the collapse).
std::string phase_table(const report::scenario_result& r) {
  report::text_table t;
  t.left_columns = 1;
  t.rows.push_back({"strategy", "before/s", "during/s", "after/s", "recovery_s"});
  const auto num = [](double v) { return fmt::format("{:.4g}", v); };
  for (const auto& s : r.strategies) {
    if (!s.phases) continue;
    t.rows.push_back({s.name, num(s.phases->before_per_s), num(s.phases->during_per_s),
                      num(s.phases->after_per_s), s.recovery_s ? num(*s.recovery_s) : "never"});
  }
  return "goodput (successes per second) before, during and after the pause\n" + t.render();
}

// --experiment outage: seed 004 end to end in this process (experiments/outage_experiment.hpp).
int run_outage(const load_flags& f, const net::load_options& o) {
  net::outage_experiment e;
  try {
    if (!f.policy.empty() || f.exponential || f.simple_delay) {
      throw parse_error(
          "--experiment outage runs fixed and exponential retries itself; drop the policy flags");
    }
    if (f.histogram_log) {
      throw parse_error(
          "--histogram-log: not with --experiment (its runs are closed-loop, one per strategy)");
    }
    if (f.pause_after + f.pause_for >= o.duration_total) {
      throw parse_error("--pause-after plus --pause-for must end before --duration");
    }
  } catch (const parse_error& err) {
    std::cerr << "backoff load: " << err.what() << '\n';
    return exit_usage;
  }
  e.pause_after = f.pause_after;
  e.pause_for = f.pause_for;
  e.load = o;
  const report::scenario_result result = net::run_outage_experiment(
      e, [](const std::string& line) { std::cout << escape_controls(line) << std::endl; },
      [] { return interrupted.load(); });
  std::cout << report::comparison_table(result) << '\n' << phase_table(result);
  if (!flush_stdout("backoff load")) return exit_failure;
  if (f.out && !write_outputs(*f.out, result)) return exit_failure;
  return exit_status();
}

// --experiment FILE: the fault schedule, or the one line that says what is wrong with it.
std::optional<net::fault_experiment> fault_experiment_of(const load_flags& f,
                                                         const net::load_options& o) {
  net::fault_experiment e;
  try {
    if (f.url_given) throw parse_error("--url: not with --experiment FILE (the server is ours)");
    if (f.pause_given) {
      throw parse_error("--pause-after and --pause-for go with --experiment outage only");
    }
    e.faults = faults::read_fault_schedule(f.experiment);
    if (const auto why = faults::network_refusal(e.faults))
      throw parse_error("--experiment: " + *why);
  } catch (const faults::fault_schedule_error& err) {
    std::cerr << "backoff load: --experiment: " << err.what()
              << " (--experiment takes 'outage' or a fault schedule file)\n";
    return std::nullopt;
  } catch (const parse_error& err) {
    std::cerr << "backoff load: " << err.what() << '\n';
    return std::nullopt;
  }
  e.load = o;
  e.duration_given = f.duration_total.has_value();
  return e;
}

void print_totals(const net::load_options& o, const net::load_run& run) {
  const bool open_loop = o.rate_per_s > 0 || !o.ramp.empty();
  std::cerr << "backoff load: " << run.requests << " requests in " << run.wall_s << " s: " << run.ok
            << " OK, " << run.errors << " errors, " << run.timeouts << " timed out"
            << (open_loop
                    ? fmt::format(", {} sends late, {} dropped", run.late_sends, run.dropped_sends)
                    : std::string())
            << (run.local_errors
                    ? ", " + std::to_string(run.local_errors) + " local errors (never sent)"
                    : "")
            << (interrupted ? " (interrupted)" : "") << '\n';
  std::cerr << "backoff load: "
            << net::format_operations_totals(run, o.strategy.fallback.has_value()) << '\n';
  if (const auto& l = run.summary.latency_s) {
    std::cerr << fmt::format(
        "backoff load: latency{} over {} completed: p50 {:.6f} s, p99 {:.6f} s, p99.9 {:.6f} s, "
        "p99.99 {:.6f} s, max {:.6f} s\n",
        open_loop ? " from the intended send time" : "", run.summary.completed, l->p50, l->p99,
        l->p999, l->p9999, l->max);
  }
}

int run_load_command(const load_flags& f) {
  net::load_options o;
  try {
    o = load_options_of(f);
  } catch (const parse_error& e) {
    std::cerr << "backoff load: " << e.what() << '\n';
    return exit_usage;
  }
  raise_descriptor_limit();
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  o.on_first_local_error = [](const std::string& what) {
    std::cerr << "backoff load: warning: " << what
              << " on this machine: such attempts are counted as local errors, not as the "
                 "server's (raise ulimit -n, or use fewer --clients)\n";
  };
  if (f.experiment == "outage") return run_outage(f, o);
  std::optional<net::fault_experiment> experiment;
  if (!f.experiment.empty()) {
    experiment = fault_experiment_of(f, o);
    if (!experiment) return exit_usage;
    o = net::fault_experiment_load(*experiment);  // its outage and duration, for the outputs
  }
  const auto print_report = [](const net::interval_report& r) {
    std::cout << net::format_report(r) << '\n' << net::format_operations_report(r) << std::endl;
  };
  const auto stop = [] { return interrupted.load(); };
  net::load_run run;
  try {
    std::optional<report::atomic_file> histogram_log;
    if (f.histogram_log) {
      histogram_log.emplace(*f.histogram_log);
      o.histogram_log = &histogram_log->stream();
    }
    if (experiment) {
      experiment->load.histogram_log = o.histogram_log;
      const auto started = [&](std::uint16_t port) {
        std::cerr << fmt::format("backoff load: --experiment {}: a server on {} with {} faults\n",
                                 quote_for_message(f.experiment), net::api_url("127.0.0.1", port),
                                 experiment->faults.faults.size());
        print_fault_plan(experiment->faults, "load");
      };
      run = net::run_fault_experiment(*experiment, started, print_report, stop);
    } else {
      run = net::run_load(o, print_report, stop);
    }
    if (histogram_log) histogram_log->commit();
  } catch (const report::write_error& e) {
    std::cerr << "backoff load: --histogram-log: " << e.what() << '\n';
    return exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "backoff load: " << (experiment ? "--experiment: " : "") << e.what() << '\n';
    return exit_failure;
  }
  if (!flush_stdout("backoff load")) return exit_failure;
  print_totals(o, run);
  if (f.out) {
    report::scenario_result result;
    result.scenario = experiment ? "fault-experiment" : "load";
    result.outage = o.outage.has_value();
    result.model = "network";
    result.seed = o.seed;
    result.strategies.push_back(run.summary);
    result.policies.emplace_back(o.name, o.strategy.policy);
    result.events = run.requests;
    result.wall_s = run.wall_s;
    if (!write_outputs(*f.out, result)) return exit_failure;
  }
  return exit_status();
}

// One flag of `backoff load`: its name, the load_flags member it sets, its one-line help, and
// how --help shows its default (nullptr: not at all, "": the value's own, else this text).
// Counts take [min, max]; durations, `rules`.
struct flag_row {
  const char* name;
  std::variant<std::string load_flags::*, std::optional<std::string> load_flags::*,
               bool load_flags::*, std::uint32_t load_flags::*, std::uint64_t load_flags::*,
               duration load_flags::*, std::optional<duration> load_flags::*>
      member;
  const char* help;
  const char* shown = nullptr;
  duration_rules rules = {};
  std::uint32_t min = 0, max = 0;
};

// The flags in --help's order.
const flag_row load_flag_rows[] = {
    {.name = "--url", .member = &load_flags::url, .help = "The server's endpoint", .shown = ""},
    {.name = "--clients",
     .member = &load_flags::clients,
     .help = "Virtual clients (closed loop)",
     .shown = "",
     .min = 1,
     .max = 1'000'000},
    {.name = "--lambda",
     .member = &load_flags::lambda,
     .help = "Mean think time between a client's operations (seconds, or a duration)",
     .shown = "",
     .rules = {.bare_seconds = true}},
    {.name = "--rate",
     .member = &load_flags::rate,
     .help = "Open loop instead: operations per second ('500' or '500/s'; also /ms, /m, /h), "
             "latency measured from each one's intended send time"},
    {.name = "--arrival",
     .member = &load_flags::arrival,
     .help = "Open loop: 'poisson' or 'constant' (evenly spaced)",
     .shown = ""},
    {.name = "--ramp",
     .member = &load_flags::ramp,
     .help = "Open loop at a rate that changes linearly between points, e.g. "
             "'0s:100/s,60s:2000/s' (the run lasts until the last point unless --duration)"},
    {.name = "--connections",
     .member = &load_flags::connections,
     .help = "Open loop: kept-alive connections to send on, one operation at a time each "
             "(wrk's -c); a send due while all are busy waits, and is late",
     .shown = "",
     .min = 1,
     .max = 100'000},
    {.name = "--max-in-flight",
     .member = &load_flags::max_in_flight,
     .help = "Open loop: operations at once; a send beyond it is dropped (counted)",
     .shown = "",
     .min = 1,
     .max = 1'000'000},
    {.name = "--deadline",
     .member = &load_flags::deadline,
     .help = "Each operation gives up this long after its intended send time (its attempts' "
             "timeouts cut to fit); a send already that late is dropped",
     .rules = {.positive = true}},
    {.name = "--histogram-log",
     .member = &load_flags::histogram_log,
     .help = "Write an HdrHistogram interval log (one histogram per second, microseconds from "
             "the intended send time) to this file"},
    {.name = "--timeout",
     .member = &load_flags::timeout,
     .help = "Per request",
     .shown = "",
     .rules = {.positive = true}},
    {.name = "--duration",
     .member = &load_flags::duration_total,
     .help = "Length of the run (of each run with --experiment, where the default is 120s)",
     .shown = "60s",
     .rules = {.positive = true}},
    {.name = "--report-every",
     .member = &load_flags::report_every,
     .help = "Interval of the lines of requests (the Go client's OK/errors/timedout line) and of "
             "operations",
     .shown = "",
     .rules = {.positive = true}},
    {.name = "--out",
     .member = &load_flags::out,
     .help = "Write summary.json and timeseries.csv here"},
    {.name = "--policy",
     .member = &load_flags::policy,
     .help = "Backoff before a retry (spec or preset). Default: constant(initial=100ms)"},
    {.name = "--exponential-backoff",
     .member = &load_flags::exponential,
     .help = "smira's Go client's exponential backoff (the smira-go preset)"},
    {.name = "--simple-backoff-delay",
     .member = &load_flags::simple_delay,
     .help = "Fixed delay before a retry"},
    {.name = "--max-attempts",
     .member = &load_flags::max_attempts,
     .help = "Per operation (0: until it succeeds)",
     .shown = "",
     .min = 0,
     .max = UINT32_MAX},
    {.name = "--no-quirks",
     .member = &load_flags::no_quirks,
     .help = "Do not let the first backoff grow from the think time (the Go client does)"},
    {.name = "--aimd",
     .member = &load_flags::aimd,
     .help = "Pace all clients through one AIMD window, e.g. 'aimd()'"},
    {.name = "--budget",
     .member = &load_flags::budget,
     .help = "One retry budget for all clients, e.g. 'token-bucket(max=10, ratio=0.1)'"},
    {.name = "--breaker",
     .member = &load_flags::breaker,
     .help = "One circuit breaker in front of the server for all clients, e.g. "
             "'breaker(kind=rate, threshold=50%, window=10s, min_calls=20, open=5s)' or "
             "'retry-only-10pct'; a refused attempt ends its operation"},
    {.name = "--throttle",
     .member = &load_flags::throttle,
     .help = "One client-side throttle for all clients: 'sre(k=2, window=2m)' (adaptive "
             "throttling; a refused attempt ends its operation) or 'cubic(...)' (paces "
             "attempts)"},
    {.name = "--hedge",
     .member = &load_flags::hedge,
     .help = "Send copies of each operation instead of retrying (gRPC A6), e.g. "
             "'hedge(max_attempts=3, delay=500ms, non_fatal=[503])'; the first success wins and "
             "the others are cancelled; --budget is charged for every copy after the first"},
    {.name = "--limiter",
     .member = &load_flags::limiter,
     .help = "One limiter for all clients, asked after the breaker: 'bulkhead(max=50)' (at most "
             "that many attempts at once), 'limit(kind=vegas)' (an adaptive concurrency limit) "
             "or 'rate(per_s=100, burst=20)'; a refused attempt ends its operation"},
    {.name = "--fallback",
     .member = &load_flags::fallback,
     .help = "Count the failed operations a fallback would answer, e.g. "
             "'fallback(on=[breaker_open, limited])' or 'fallback()' (every failure): "
             "summary.json's fell_back_rate and answered_rate"},
    {.name = "--propagate-deadline",
     .member = &load_flags::propagate_deadline,
     .help = "Send each attempt's time (--timeout, cut to --deadline) and number as grpc-timeout, "
             "x-envoy-expected-rq-timeout-ms, x-envoy-attempt-count and "
             "grpc-previous-rpc-attempts headers: `backoff serve` drops work whose caller gave up"},
    {.name = "--send-key",
     .member = &load_flags::send_key,
     .help = "Send each operation's key as the simulator's callers do (x-backoff-key: splitmix64 "
             "of the operation's number), so that a per-key outage ('outage(keys=50%)') fails the "
             "same operations on every retry"},
    {.name = "--seed",
     .member = &load_flags::seed,
     .help = "Seed for think times and jitter",
     .shown = ""},
    {.name = "--name", .member = &load_flags::name, .help = "Strategy name in the outputs"},
    {.name = "--experiment",
     .member = &load_flags::experiment,
     .help = "'outage': smira's experiment (2016) end to end: an in-process server, paused once, "
             "and the clients "
             "run with fixed, then exponential retries. Or a fault schedule FILE (TOML, as serve "
             "--faults): an in-process server follows it while this run's strategy runs against "
             "it"},
    {.name = "--pause-after",
     .member = &load_flags::pause_after,
     .help = "--experiment: when the server pauses",
     .shown = ""},
    {.name = "--pause-for",
     .member = &load_flags::pause_for,
     .help = "--experiment: how long it stays paused",
     .shown = "",
     .rules = {.positive = true}},
};

// The row's option on `sub`, bound to its member of `f`, typed by the member.
void add_flag_row(CLI::App& sub, load_flags& f, const flag_row& row) {
  CLI::Option* option = std::visit(
      [&](auto member) -> CLI::Option* {
        auto& value = f.*member;
        using value_type = std::remove_reference_t<decltype(value)>;
        if constexpr (std::is_same_v<value_type, bool>) {
          return sub.add_flag(row.name, value, row.help);
        } else if constexpr (std::is_same_v<value_type, std::uint32_t>) {
          return add_count_option<std::uint32_t>(sub, row.name, value, row.help, row.min, row.max);
        } else if constexpr (std::is_same_v<value_type, std::uint64_t>) {
          return add_seed_option(sub, row.name, value, row.help);
        } else if constexpr (std::is_same_v<value_type, duration> ||
                             std::is_same_v<value_type, std::optional<duration>>) {
          return add_duration_option(sub, row.name, value, row.help, row.rules);
        } else {
          return sub.add_option(row.name, value, row.help);
        }
      },
      row.member);
  if (row.shown == nullptr) return;
  if (*row.shown == '\0') {
    option->capture_default_str();
  } else {
    option->default_str(row.shown);
  }
}

}  // namespace

void setup_load(CLI::App& app, int& status) {
  auto f = std::make_shared<load_flags>();
  CLI::App* sub = app.add_subcommand("load",
                                     "The clients of smira's experiment (2016): N virtual clients "
                                     "that retry with a library strategy");
  for (const flag_row& row : load_flag_rows) add_flag_row(*sub, *f, row);
  auto system = std::make_shared<system_flags>();
  add_system_flags(sub, *system);
  sub->callback([f, system, sub, &status] {
    if (system->system || !system->sets.empty() || system->plot || system->compare) {
      const auto seed =
          sub->count("--seed") > 0 ? std::optional<std::uint64_t>(f->seed) : std::nullopt;
      status = load_a_system(*system, *sub, seed, f->out);
      return;
    }
    // The experiment needs time after the resume for recovery_s (5 s at 90 % of the earlier
    // goodput): the simulator puts exponential's at about 30 s after a 10 s pause.
    if (f->experiment == "outage" && !f->duration_total) {
      f->duration_total = std::chrono::seconds(120);
    }
    f->url_given = sub->count("--url") > 0;
    f->pause_given = sub->count("--pause-after") + sub->count("--pause-for") > 0;
    status = run_load_command(*f);
  });
}

}  // namespace backoff::cli
