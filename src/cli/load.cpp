// SPDX-License-Identifier: Apache-2.0
// `backoff load`: seed 004's client as a load generator. N virtual clients (closed loop: think
// Exp(--lambda), one request in flight each) or Poisson arrivals (--rate), a per-request timeout,
// and retries with any library strategy (--policy, -exponential-backoff, --aimd, --budget,
// --breaker, --hedge). Prints the seed's "OK: x req/sec, errors: y req/sec, timedout: z req/sec"
// every --report-every and writes the simulator's summary.json and timeseries.csv with --out
// (docs/NETWORK.md).
#include "net/client/load.hpp"

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "backoff/circuit_breaker.hpp"
#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/hedge.hpp"
#include "backoff/spec.hpp"
#include "commands.hpp"
#include "experiments/outage_experiment.hpp"
#include "fault_flags.hpp"
#include "net/faults/faults.hpp"
#include "net/server/server.hpp"
#include "output.hpp"
#include "report/output_files.hpp"
#include "report/summary.hpp"
#include "report/text_table.hpp"

namespace backoff::cli {
namespace {

struct load_flags {
  std::string url = "http://127.0.0.1:8070/api";
  std::string clients = "1000";
  std::string lambda = "10s";
  std::string rate;
  std::string arrival = "poisson";
  std::string ramp;
  std::string max_in_flight = "10000";
  std::string connections = "100";
  std::string deadline;
  std::optional<std::string> histogram_log;
  std::string timeout = "2s";
  std::string duration_text = "60s";
  bool duration_given = false;
  std::string report_every = "5s";
  std::optional<std::string> out;  // given empty is a mistake, not "no outputs"
  std::string policy;
  bool exponential = false;
  std::string simple_delay;
  std::string max_attempts = "0";
  bool no_quirks = false;
  std::string aimd;
  std::string budget;
  std::string breaker;
  std::string throttle;
  std::string hedge;
  bool propagate_deadline = false;
  std::string seed = "1";
  std::string name;
  std::string experiment;
  std::string pause_after = "10s";
  std::string pause_for = "10s";
  bool url_given = false;
  bool pause_given = false;
};

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) {
  interrupted = true;
}

// The seed's -lambda is a number of seconds ("10"); ours also takes a duration ("10s").
duration seconds_or_duration(const std::string& text) {
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc{} && end == text.data() + text.size()) {
    if (!(seconds >= 0) || seconds > 1e9) throw parse_error("bad duration \"" + text + "\"");
    return std::chrono::duration_cast<duration>(std::chrono::duration<double>(seconds));
  }
  return parse_flag_duration(text);
}

// A duration flag: the error names the flag, and `positive` refuses zero.
duration flag_duration(const std::string& flag, const std::string& text, bool positive) {
  duration d{};
  try {
    d = parse_flag_duration(text);
  } catch (const parse_error& e) {
    throw parse_error(flag + ": " + e.what());
  }
  if (positive && d.count() == 0) {
    throw parse_error(flag + ": must be more than 0, got \"" + text + "\"");
  }
  return d;
}

std::uint64_t whole(const std::string& flag, const std::string& text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
    throw parse_error(flag + ": expected a whole number >= 0, got \"" + text + "\"");
  }
  return v;
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

// --experiment outage: seed 004 end to end in this process (src/net/experiment.hpp).
int run_experiment(const load_flags& f, const net::load_options& o) {
  net::outage_experiment e;
  try {
    if (!f.policy.empty() || f.exponential || !f.simple_delay.empty()) {
      throw parse_error(
          "--experiment outage runs fixed and exponential retries itself; drop the policy flags");
    }
    if (f.histogram_log) {
      throw parse_error(
          "--histogram-log: not with --experiment (its runs are closed-loop, one per strategy)");
    }
    e.pause_after = flag_duration("--pause-after", f.pause_after, false);
    e.pause_for = flag_duration("--pause-for", f.pause_for, true);
    if (e.pause_after + e.pause_for >= o.duration_total) {
      throw parse_error("--pause-after plus --pause-for must end before --duration");
    }
  } catch (const parse_error& err) {
    std::cerr << "backoff load: " << err.what() << '\n';
    return exit_usage;
  }
  e.load = o;
  const report::scenario_result result = net::run_outage_experiment(
      e, [](const std::string& line) { std::cout << escape_controls(line) << std::endl; },
      [] { return interrupted.load(); });
  std::cout << report::comparison_table(result) << '\n' << phase_table(result);
  if (!flush_stdout("backoff load")) return exit_failure;
  if (f.out && !write_outputs(*f.out, result)) return exit_failure;
  return interrupted ? 128 + SIGINT : exit_ok;
}

int run_load_command(const load_flags& f) {
  net::load_options o;
  try {
    o.target = net::parse_target(f.url);
    const std::uint64_t clients = whole("--clients", f.clients);
    if (clients == 0 || clients > 1'000'000) {
      throw parse_error("--clients: expected 1 to 1000000, got \"" + f.clients + "\"");
    }
    o.clients = static_cast<std::uint32_t>(clients);
    try {
      o.think_mean = seconds_or_duration(f.lambda);
    } catch (const parse_error& e) {
      throw parse_error(std::string("--lambda: ") + e.what());
    }
    if (!f.rate.empty() && !f.ramp.empty()) {
      throw parse_error("give --rate or --ramp, not both (a fixed rate is a ramp of one point)");
    }
    if (!f.rate.empty()) o.rate_per_s = net::parse_rate("--rate", f.rate, false);
    if (!f.ramp.empty()) o.ramp = net::parse_ramp(f.ramp);
    o.arrival = net::parse_arrival(f.arrival);
    const std::uint64_t cap = whole("--max-in-flight", f.max_in_flight);
    if (cap == 0 || cap > 1'000'000) {
      throw parse_error("--max-in-flight: expected 1 to 1000000, got \"" + f.max_in_flight + "\"");
    }
    o.max_in_flight = static_cast<std::uint32_t>(cap);
    const std::uint64_t connections = whole("--connections", f.connections);
    if (connections == 0 || connections > 100'000) {
      throw parse_error("--connections: expected 1 to 100000, got \"" + f.connections + "\"");
    }
    o.connections = static_cast<std::uint32_t>(connections);
    if (!f.deadline.empty()) o.request_deadline = flag_duration("--deadline", f.deadline, true);
    if (f.histogram_log && f.histogram_log->empty()) {
      throw parse_error("--histogram-log: needs a file");
    }
    o.timeout = flag_duration("--timeout", f.timeout, true);
    // A ramp is as long as its points, unless --duration says otherwise.
    std::string duration_text = f.duration_text;
    if (!o.ramp.empty() && !f.duration_given && o.ramp.back().at.count() > 0) {
      duration_text = format_duration(o.ramp.back().at);
    }
    o.duration_total = flag_duration("--duration", duration_text, true);
    o.report_every = flag_duration("--report-every", f.report_every, true);
    if (f.out && f.out->empty()) throw parse_error("--out: needs a folder");
    // The seed's client takes -simple-backoff-delay with -exponential-backoff and ignores the
    // delay (docs/NETWORK.md's walkthrough passes both): so does this one, and says so.
    const bool delay_ignored = f.exponential && !f.simple_delay.empty();
    const int choices = (f.exponential ? 1 : 0) + (f.policy.empty() ? 0 : 1) +
                        (f.simple_delay.empty() || delay_ignored ? 0 : 1);
    if (choices > 1) {
      throw parse_error("give one of --policy, --exponential-backoff and --simple-backoff-delay");
    }
    if (delay_ignored) {
      (void)flag_duration("--simple-backoff-delay", f.simple_delay, false);  // still a duration
      std::cerr << "backoff load: --simple-backoff-delay is ignored with --exponential-backoff, "
                   "as the seed's client does\n";
    }
    std::string spec = "constant(initial=100ms)";  // the seed client's default: retry after 100 ms
    std::string name = "fixed";
    if (f.exponential) {
      spec = "smira-go";
      name = "exponential";
    } else if (!f.simple_delay.empty()) {
      spec = "constant(initial=" +
             format_duration(flag_duration("--simple-backoff-delay", f.simple_delay, false)) + ")";
    } else if (!f.policy.empty()) {
      spec = f.policy;
      name = f.policy;
    }
    o.policy = parse_policy(spec);
    o.strategy = f.name.empty() ? name : f.name;
    o.max_attempts = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(whole("--max-attempts", f.max_attempts), UINT32_MAX));
    o.grow_from_think = !f.no_quirks;
    if (!f.aimd.empty()) o.window = parse_window(f.aimd);
    if (!f.budget.empty()) o.budget = parse_budget(f.budget);
    if (!f.breaker.empty()) {
      o.breaker = parse_breaker(f.breaker);
      if (o.breaker->keyed) {
        std::cerr << "backoff load: --breaker: keyed=true needs keys, and a run has one --url: "
                     "drop keyed\n";
        return exit_usage;
      }
    }
    if (!f.throttle.empty()) o.throttle = parse_throttle(f.throttle);
    if (!f.hedge.empty()) {
      o.hedge = parse_hedge(f.hedge);
      // gRPC A6: a method has a retry policy or a hedging policy, never both.
      if (choices > 0 || o.max_attempts != 0 || o.window) {
        throw parse_error(
            "--hedge replaces retrying (gRPC A6): give it no --policy, --exponential-backoff, "
            "--simple-backoff-delay, --max-attempts or --aimd");
      }
    }
    o.propagate_deadline = f.propagate_deadline;
    o.seed = whole("--seed", f.seed);
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
  if (f.experiment == "outage") return run_experiment(f, o);
  // --experiment FILE: a server in this process that follows the fault schedule, with the seed's
  // service; the run's time 0 is the schedule's.
  std::optional<net::server> local;
  if (!f.experiment.empty()) {
    net::server_options so;
    try {
      if (f.url_given) throw parse_error("--url: not with --experiment FILE (the server is ours)");
      if (f.pause_given) {
        throw parse_error("--pause-after and --pause-for go with --experiment outage only");
      }
      so.faults = net::read_fault_schedule(f.experiment);
    } catch (const net::fault_schedule_error& e) {
      std::cerr << "backoff load: --experiment: " << e.what()
                << " (--experiment takes 'outage' or a fault schedule file)\n";
      return exit_usage;
    } catch (const parse_error& e) {
      std::cerr << "backoff load: " << e.what() << '\n';
      return exit_usage;
    }
    // recovery_s and the goodput per phase around the first window that ends; without
    // --duration the run lasts until 30 s after the last window ends (60 s with none).
    duration last_end{0};
    for (const auto& sf : so.faults.faults) {
      if (sf.when.end == duration::max()) continue;
      last_end = std::max(last_end, sf.when.end);
      if (!o.outage || sf.when.end.count() < o.outage->end) {
        report::outage_window window;
        window.start = sf.when.start.count();
        window.end = sf.when.end.count();
        o.outage = window;
      }
    }
    o.phase_goodput = o.outage.has_value();
    if (!f.duration_given) {
      o.duration_total = last_end.count() > 0 ? last_end + std::chrono::seconds(30)
                                              : duration(std::chrono::seconds(60));
    }
    so.host = "127.0.0.1";
    so.port = 0;
    so.log_every_second = false;
    try {
      local.emplace(so);
      local->start();
    } catch (const std::exception& e) {
      std::cerr << "backoff load: --experiment: " << e.what() << '\n';
      return exit_failure;
    }
    o.target.host = "127.0.0.1";
    o.target.port = local->port();
    o.target.path = "/api";
    o.server_concurrency = [&local] { return local->metrics().concurrency.load(); };
    std::cerr << fmt::format("backoff load: --experiment {}: a server on {} with {} faults\n",
                             quote_for_message(f.experiment),
                             net::api_url("127.0.0.1", local->port()), so.faults.faults.size());
    print_fault_plan(so.faults, "load");
  }
  net::load_run run;
  try {
    std::optional<report::atomic_file> histogram_log;
    if (f.histogram_log) {
      histogram_log.emplace(*f.histogram_log);
      o.histogram_log = &histogram_log->stream();
    }
    run = net::run_load(
        o, [](const net::interval_report& r) { std::cout << net::format_report(r) << std::endl; },
        [] { return interrupted.load(); });
    if (histogram_log) histogram_log->commit();
  } catch (const report::write_error& e) {
    std::cerr << "backoff load: --histogram-log: " << e.what() << '\n';
    return exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "backoff load: " << e.what() << '\n';
    return exit_failure;
  }
  if (!flush_stdout("backoff load")) return exit_failure;
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
  if (const auto& l = run.summary.latency_s) {
    std::cerr << fmt::format(
        "backoff load: latency{} over {} completed: p50 {:.6f} s, p99 {:.6f} s, p99.9 {:.6f} s, "
        "p99.99 {:.6f} s, max {:.6f} s\n",
        open_loop ? " from the intended send time" : "", run.summary.completed, l->p50, l->p99,
        l->p999, l->p9999, l->max);
  }
  if (local) {
    local->stop();
    local->wait();
  }
  if (f.out) {
    report::scenario_result result;
    result.scenario = local ? "fault-experiment" : "load";
    result.outage = o.outage.has_value();
    result.model = "network";
    result.seed = o.seed;
    result.strategies.push_back(run.summary);
    result.policies.emplace_back(o.strategy, o.policy);
    result.events = run.requests;
    result.wall_s = run.wall_s;
    if (!write_outputs(*f.out, result)) return exit_failure;
  }
  return interrupted ? 128 + SIGINT : exit_ok;
}

}  // namespace

void setup_load(CLI::App& app, int& status) {
  auto f = std::make_shared<load_flags>();
  CLI::App* sub = app.add_subcommand(
      "load", "Seed 004's client: N virtual clients that retry with a library strategy");
  sub->add_option("--url", f->url, "The server's endpoint")->capture_default_str();
  sub->add_option("--clients", f->clients, "Virtual clients (closed loop)")->capture_default_str();
  sub->add_option("--lambda", f->lambda,
                  "Mean think time between a client's operations (seconds, or a duration)")
      ->capture_default_str();
  sub->add_option("--rate", f->rate,
                  "Open loop instead: operations per second ('500' or '500/s'; also /ms, /m, "
                  "/h), latency measured from each one's intended send time");
  sub->add_option("--arrival", f->arrival, "Open loop: 'poisson' or 'constant' (evenly spaced)")
      ->capture_default_str();
  sub->add_option("--ramp", f->ramp,
                  "Open loop at a rate that changes linearly between points, e.g. "
                  "'0s:100/s,60s:2000/s' (the run lasts until the last point unless --duration)");
  sub->add_option("--connections", f->connections,
                  "Open loop: kept-alive connections to send on, one operation at a time each "
                  "(wrk's -c); a send due while all are busy waits, and is late")
      ->capture_default_str();
  sub->add_option("--max-in-flight", f->max_in_flight,
                  "Open loop: operations at once; a send beyond it is dropped (counted)")
      ->capture_default_str();
  sub->add_option("--deadline", f->deadline,
                  "Each operation gives up this long after its intended send time (its "
                  "attempts' timeouts cut to fit); a send already that late is dropped");
  sub->add_option("--histogram-log", f->histogram_log,
                  "Write an HdrHistogram interval log (one histogram per second, microseconds "
                  "from the intended send time) to this file");
  sub->add_option("--timeout", f->timeout, "Per request")->capture_default_str();
  sub->add_option("--duration", f->duration_text,
                  "Length of the run (of each run with --experiment, where the default is 120s)")
      ->capture_default_str();
  sub->add_option("--report-every", f->report_every, "Interval of the OK/errors/timedout line")
      ->capture_default_str();
  sub->add_option("--out", f->out, "Write summary.json and timeseries.csv here");
  sub->add_option("--policy", f->policy,
                  "Backoff before a retry (spec or preset). Default: constant(initial=100ms)");
  sub->add_flag("--exponential-backoff", f->exponential,
                "The seed client's exponential backoff (the smira-go preset)");
  sub->add_option("--simple-backoff-delay", f->simple_delay, "Fixed delay before a retry");
  sub->add_option("--max-attempts", f->max_attempts, "Per operation (0: until it succeeds)")
      ->capture_default_str();
  sub->add_flag("--no-quirks", f->no_quirks,
                "Do not let the first backoff grow from the think time (the Go client does)");
  sub->add_option("--aimd", f->aimd, "Pace all clients through one AIMD window, e.g. 'aimd()'");
  sub->add_option("--budget", f->budget,
                  "One retry budget for all clients, e.g. 'token-bucket(max=10, ratio=0.1)'");
  sub->add_option("--breaker", f->breaker,
                  "One circuit breaker in front of the server for all clients, e.g. "
                  "'breaker(kind=rate, threshold=50%, window=10s, min_calls=20, open=5s)' or "
                  "'retry-only-10pct'; a refused attempt ends its operation");
  sub->add_option("--throttle", f->throttle,
                  "One client-side throttle for all clients: 'sre(k=2, window=2m)' (adaptive "
                  "throttling; a refused attempt ends its operation) or 'cubic(...)' (paces "
                  "attempts)");
  sub->add_option("--hedge", f->hedge,
                  "Send copies of each operation instead of retrying (gRPC A6), e.g. "
                  "'hedge(max_attempts=3, delay=500ms, non_fatal=[503])'; the first success wins "
                  "and the others are cancelled; --budget is charged for every copy after the "
                  "first");
  sub->add_flag(
      "--propagate-deadline", f->propagate_deadline,
      "Send each attempt's time (--timeout) and number as grpc-timeout, "
      "x-envoy-expected-rq-timeout-ms, x-envoy-attempt-count and "
      "grpc-previous-rpc-attempts headers: `backoff serve` drops work whose caller gave up");
  sub->add_option("--seed", f->seed, "Seed for think times and jitter")->capture_default_str();
  sub->add_option("--name", f->name, "Strategy name in the outputs");
  sub->add_option("--experiment", f->experiment,
                  "'outage': seed 004 end to end: an in-process server, paused once, and the "
                  "clients run with fixed, then exponential retries. Or a fault schedule FILE "
                  "(TOML, as serve --faults): an in-process server follows it while this run's "
                  "strategy runs against it");
  sub->add_option("--pause-after", f->pause_after, "--experiment: when the server pauses")
      ->capture_default_str();
  sub->add_option("--pause-for", f->pause_for, "--experiment: how long it stays paused")
      ->capture_default_str();
  sub->callback([f, sub, &status] {
    // The experiment needs time after the resume for recovery_s (5 s at 90 % of the earlier
    // goodput): the simulator puts exponential's at about 30 s after a 10 s pause.
    if (!f->experiment.empty() && sub->count("--duration") == 0) f->duration_text = "120s";
    f->duration_given = sub->count("--duration") > 0;
    f->url_given = sub->count("--url") > 0;
    f->pause_given = sub->count("--pause-after") + sub->count("--pause-for") > 0;
    status = run_load_command(*f);
  });
}

}  // namespace backoff::cli
