// SPDX-License-Identifier: Apache-2.0
#include "system_load.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "backoff/random.hpp"
#include "net/client/system_clients.hpp"
#include "net/server/server.hpp"
#include "report/recorder.hpp"
#include "sim/models/model.hpp"
#include "sim/run/runner.hpp"

namespace backoff::net {
namespace {

using clock = std::chrono::steady_clock;
using systems::system_spec;
using systems::time_ns;

// Descriptors besides the connections: stdio, the clients' loop, files, a margin.
constexpr std::uint64_t descriptor_reserve = 64;
// Per replica: its listening socket and its loop's epoll and eventfd.
constexpr std::uint64_t descriptors_per_server = 3;
// The most replicas one run starts: a thread each.
constexpr std::uint64_t most_servers = 256;
// Memory: each connection held at once (both ends: buffers, the coroutines of its request and
// its caller; the kernel's socket buffers are not counted), each replica (its thread's stack as
// touched, its loop, its figures), and the rest of the process. Generous, as a refusal costs a
// second and running out of memory ends the run.
constexpr std::uint64_t bytes_per_connection = 64 * 1024;
constexpr std::uint64_t bytes_per_server = 1024 * 1024;
constexpr std::uint64_t bytes_base = 64 * 1024 * 1024;

// How long one operation of `edge` can last, when its guards bound it; none when they do not.
std::optional<double> operation_bound_s(const backoff::strategy& g) {
  if (g.deadline && g.deadline->total.count() > 0) {
    return std::chrono::duration<double>(g.deadline->total).count();
  }
  if (g.deadline && g.deadline->per_attempt.count() > 0 && g.max_attempts > 0) {
    // Attempts at most per_attempt each; the waits between them are not counted: a bound on
    // what is in flight at once, not on the operation's length.
    return std::chrono::duration<double>(g.deadline->per_attempt).count() * g.max_attempts;
  }
  return std::nullopt;
}

// MemAvailable of /proc/meminfo in bytes; none when it cannot be read.
std::optional<std::uint64_t> memory_available() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

std::uint64_t thread_limit() {
  std::uint64_t limit = 32768;
  std::ifstream threads_max("/proc/sys/kernel/threads-max");
  std::uint64_t system_wide = 0;
  if (threads_max >> system_wide && system_wide > 0) limit = std::min(limit, system_wide);
  rlimit nproc{};
  if (::getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY) {
    limit = std::min<std::uint64_t>(limit, nproc.rlim_cur);
  }
  return limit;
}

}  // namespace

system_resources check_system_resources(const system_spec& spec) {
  system_resources r;
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0) {
    if (files.rlim_cur < files.rlim_max) {
      files.rlim_cur = files.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &files);
      ::getrlimit(RLIMIT_NOFILE, &files);
    }
    r.descriptor_limit = files.rlim_cur == RLIM_INFINITY ? UINT64_MAX : files.rlim_cur;
  }
  for (const systems::service_spec& s : spec.services) r.servers += s.replicas;
  r.threads = r.servers + 1;
  r.thread_limit = std::min(thread_limit(), most_servers + 1);
  if (r.threads > r.thread_limit) {
    throw config::config_error(fmt::format(
        "the system has {} replicas in all: a real run starts a server thread for each, and at "
        "most {} fit here (fewer replicas, or simulate it with backoff sim)",
        r.servers, r.thread_limit - 1));
  }
  // Connections at once: a client's operation holds one, and so does a worker on a call. Open
  // groups: their rate over the longest an operation can last (the run's length when nothing
  // bounds it), or what the service they call can hold, whichever is smaller.
  std::uint64_t clients = 0;
  const double run_s = static_cast<double>(spec.duration + spec.drain) * 1e-9;
  for (const systems::client_group& g : spec.clients) {
    if (g.arrivals == systems::arrival_kind::closed) {
      clients += g.users;
      continue;
    }
    const double rate = std::max(g.rate, g.rate_to);
    double horizon = run_s;
    for (const auto& guards : spec.edge_guards) {
      if (const auto bound = operation_bound_s(guards[g.edge])) {
        horizon = std::min(horizon, *bound);
      }
    }
    double peak = rate * horizon;
    const systems::service_spec& to = spec.services[g.to];
    const std::uint64_t held = to.max_connections > 0 ? to.max_connections
                               : to.workers > 0       ? to.workers + to.queue
                                                      : 0;
    if (held > 0) peak = std::min(peak, static_cast<double>(held * to.replicas) + rate);
    clients += static_cast<std::uint64_t>(std::ceil(peak));
  }
  std::uint64_t calls = 0;
  for (const systems::service_spec& s : spec.services) {
    if (s.calls.empty()) continue;
    const std::uint64_t workers = s.workers > 0 ? s.workers : (s.queue > 0 ? s.queue : 1000);
    calls += s.replicas * workers * s.calls.size();
  }
  r.memory = bytes_base + bytes_per_server * r.servers + bytes_per_connection * (clients + calls);
  r.memory_available = memory_available().value_or(0);
  if (r.memory_available > 0 && r.memory > r.memory_available) {
    const std::uint64_t fixed = bytes_base + bytes_per_server * r.servers;
    throw config::config_error(fmt::format(
        "the system can hold {} connections at once, about {} MiB with its {} replicas, over the "
        "{} MiB this machine has available; about {} connections would fit",
        clients + calls, r.memory >> 20, r.servers, r.memory_available >> 20,
        r.memory_available > fixed ? (r.memory_available - fixed) / bytes_per_connection : 0));
  }
  r.descriptors = 2 * (clients + calls) + descriptors_per_server * r.servers + descriptor_reserve;
  if (r.descriptors > r.descriptor_limit) {
    throw config::config_error(fmt::format(
        "the system can hold {} connections at once ({} from its clients, {} from its services' "
        "calls), both ends in this process: {} descriptors, over this machine's limit of {} "
        "(ulimit -n); about {} connections would fit",
        clients + calls, clients, calls, r.descriptors, r.descriptor_limit,
        r.descriptor_limit > descriptor_reserve + descriptors_per_server * r.servers
            ? (r.descriptor_limit - descriptor_reserve - descriptors_per_server * r.servers) / 2
            : 0));
  }
  return r;
}

namespace {

// The servers of one strategy's run: every replica of every service, on free loopback ports,
// started callees first so that each caller knows where its callees listen.
struct fleet {
  std::vector<std::vector<std::unique_ptr<server>>> replicas;  // per service
  std::vector<system_clients::endpoints> endpoints;            // per service

  void stop_all() {
    for (auto& service : replicas) {
      for (auto& s : service) {
        if (s) s->stop();
      }
    }
    for (auto& service : replicas) {
      for (auto& s : service) {
        if (s) s->wait();
      }
    }
  }
  ~fleet() { stop_all(); }
};

// The calls service `s` makes under `strategy`, to its callees' replicas.
std::vector<downstream_spec> calls_of(const system_spec& spec, std::size_t strategy,
                                      const systems::service_spec& s, const fleet& f) {
  std::vector<downstream_spec> calls;
  for (const systems::call_spec& c : s.calls) {
    const systems::service_spec& to = spec.services[c.to];
    calls.push_back({c, to.name, to.balance, f.endpoints[c.to], spec.edge_guards[strategy][c.edge],
                     spec.edge_options_of[strategy][c.edge], to.ejection});
  }
  return calls;
}

// Binds every replica (none started yet). Services in decreasing depth: a callee's depth is
// greater than its caller's, since calls form no cycle here.
void bind_fleet(const system_spec& spec, std::size_t strategy, std::uint64_t seed, fleet& f) {
  const auto n = static_cast<std::uint32_t>(spec.services.size());
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return spec.services[a].depth > spec.services[b].depth;
  });
  f.replicas.resize(n);
  f.endpoints.resize(n);
  for (const std::uint32_t i : order) {
    const systems::service_spec& s = spec.services[i];
    for (std::uint32_t r = 0; r < s.replicas; ++r) {
      server_options o;
      o.host = "127.0.0.1";
      o.port = 0;
      o.threads = 1;
      o.tier = s;
      o.tier_calls = calls_of(spec, strategy, s, f);
      o.tier_bucket = std::chrono::nanoseconds(spec.bucket);
      o.fault_seed = derive_seed(seed, (static_cast<std::uint64_t>(i) << 32) | r);
      try {
        f.replicas[i].push_back(std::make_unique<server>(o));
      } catch (const std::exception& e) {
        throw std::runtime_error(fmt::format("service {} replica {}: cannot serve on 127.0.0.1: {}",
                                             s.name, r, e.what()));
      }
      f.endpoints[i].emplace_back(boost::asio::ip::make_address("127.0.0.1"),
                                  f.replicas[i].back()->port());
    }
  }
}

// The figures of one service's replicas added up. Peaks are the sum of each replica's peak: an
// upper bound on the service's (the replicas' peaks need not come at once).
void add_figures(const tier_figures& one, tier_figures& all) {
  const auto add = [](const report::service_counts_bucket& a, report::service_counts_bucket& b) {
    b.arrivals += a.arrivals;
    b.attempts += a.attempts;
    b.completed += a.completed;
    b.rejected += a.rejected;
    b.failed += a.failed;
    b.peak_in_flight += a.peak_in_flight;
    b.peak_queue += a.peak_queue;
  };
  add(one.total, all.total);
  all.latency.add(one.latency);
  if (all.buckets.size() < one.buckets.size()) all.buckets.resize(one.buckets.size());
  for (std::size_t b = 0; b < one.buckets.size(); ++b) add(one.buckets[b], all.buckets[b]);
}

// summary.json's `services` and services.csv, as the simulator reports them (system_servers.cpp,
// report_fields), from what the replicas counted.
void report_services(const system_spec& spec, const fleet& f, std::uint64_t operations,
                     report::recorder& out, std::uint64_t& requests) {
  std::vector<tier_figures> per_service(spec.services.size());
  for (std::size_t i = 0; i < spec.services.size(); ++i) {
    for (const auto& s : f.replicas[i]) {
      if (const auto figures = s->service_figures()) add_figures(*figures, per_service[i]);
    }
  }
  const auto per_op = [&](std::uint64_t n) -> std::optional<double> {
    if (operations == 0) return std::nullopt;
    return static_cast<double>(n) / static_cast<double>(operations);
  };
  std::size_t deepest = 0;
  for (std::size_t i = 0; i < spec.services.size(); ++i) {
    if (spec.services[i].depth > spec.services[deepest].depth) deepest = i;
  }
  out.field("deepest_calls_per_request", per_op(per_service[deepest].total.attempts));
  std::vector<report::service_series> series;
  for (std::size_t i = 0; i < spec.services.size(); ++i) {
    const tier_figures& n = per_service[i];
    requests += n.total.attempts;
    const std::string p = "services." + spec.services[i].name + ".";
    out.field(p + "arrivals", static_cast<double>(n.total.arrivals));
    out.field(p + "attempts", static_cast<double>(n.total.attempts));
    out.field(p + "completed", static_cast<double>(n.total.completed));
    out.field(p + "rejected", static_cast<double>(n.total.rejected));
    out.field(p + "failed", static_cast<double>(n.total.failed));
    out.field(p + "amplification", per_op(n.total.attempts));
    out.field(p + "peak_in_flight", static_cast<double>(n.total.peak_in_flight));
    for (const auto& [name, q] :
         {std::pair{"p50", 0.5}, std::pair{"p95", 0.95}, std::pair{"p99", 0.99}}) {
      out.field(
          p + "latency_s." + name,
          n.latency.count() == 0
              ? std::nullopt
              : std::optional<double>(static_cast<double>(n.latency.value_at_quantile(q)) * 1e-9));
    }
    series.push_back({spec.services[i].name, n.buckets});
  }
  out.services(std::move(series));
}

// What the servers hold now: requests in service and queued, every replica added up.
std::pair<std::int64_t, std::int64_t> held_now(const fleet& f) {
  std::int64_t in_service = 0, queued = 0;
  for (const auto& service : f.replicas) {
    for (const auto& s : service) {
      const server_metrics& m = s->metrics();
      in_service += m.tier_in_service.load(std::memory_order_relaxed);
      queued += m.tier_queued.load(std::memory_order_relaxed);
    }
  }
  return {in_service, queued};
}

struct strategy_outcome {
  report::strategy_summary summary;
  std::uint64_t requests = 0;
  bool stopped = false;
  time_ns end = 0;  // when the run ended, from its origin
};

// The watch over one run, on the clients' loop: the servers' load for the time series every
// 10 ms, a progress line a second, the end (arrivals over and nothing in flight, or the run's
// length with its drain), a stop, a replica whose loop died.
task<> supervise(const system_spec& spec, fleet& f, system_clients& clients, report::recorder& out,
                 clock::time_point origin, const system_load_options& o, const std::string& name,
                 strategy_outcome& result, std::string& failure) {
  auto executor = co_await boost::asio::this_coro::executor;
  timer_type timer(executor);
  const auto end = origin + std::chrono::nanoseconds(spec.duration + spec.drain);
  auto next_line = origin + std::chrono::seconds(1);
  std::uint64_t lines = 0;
  for (;;) {
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(on_loop);
    const auto now = clock::now();
    const auto t = std::chrono::duration_cast<std::chrono::nanoseconds>(now - origin).count();
    const auto [in_service, queued] = held_now(f);
    out.load(std::max<time_ns>(t, 0), in_service, queued);
    if (o.progress && now >= next_line) {
      next_line += std::chrono::seconds(1);
      ++lines;
      o.progress(fmt::format("{}: {} s: {} operations, {} in flight; servers hold {} ({} queued)",
                             name, lines, clients.operations(), clients.in_flight(),
                             in_service + queued, queued));
    }
    for (std::size_t i = 0; i < f.replicas.size() && failure.empty(); ++i) {
      for (std::size_t r = 0; r < f.replicas[i].size(); ++r) {
        if (const auto why = f.replicas[i][r]->failure()) {
          failure = fmt::format("service {} replica {} died: {}", spec.services[i].name, r, *why);
          break;
        }
      }
    }
    const bool stop = o.stop && o.stop();
    if (stop || !failure.empty() || now >= end || (clients.done() && t >= 0)) {
      result.stopped = stop;
      result.end = std::max<time_ns>(t, 0);
      clients.stop(now);
      co_return;
    }
  }
}

strategy_outcome run_one(const system_spec& spec, std::size_t strategy, const std::string& name,
                         std::uint64_t seed, const sim::model_runner& model,
                         const system_load_options& o) {
  report::recorder_options ro;
  ro.strategy = name;
  ro.bucket = spec.bucket;
  ro.outage = model.outage();
  ro.recovery_hold = model.recovery_hold();
  ro.baseline = 30'000'000'000;
  report::recorder out(ro, nullptr);
  fleet f;
  bind_fleet(spec, strategy, seed, f);
  // The servers start a little ahead of time 0, so that the first arrivals find them serving.
  const auto origin = clock::now() + std::chrono::milliseconds(20);
  for (auto& service : f.replicas) {
    for (auto& s : service) s->start(origin);
  }
  boost::asio::io_context io(1);
  strategy_outcome result;
  std::string failure;
  std::uint64_t operations = 0, local_errors = 0;
  {
    system_clients clients(spec, strategy, f.endpoints, seed, out, io.get_executor());
    clients.start(origin);
    boost::asio::co_spawn(io, supervise(spec, f, clients, out, origin, o, name, result, failure),
                          boost::asio::detached);
    io.run();  // until every operation has ended or been cut at the stop
    operations = clients.operations();
    if (clients.late_sends() > 0 && o.progress) {
      o.progress(fmt::format("{}: {} of {} operations sent more than 1 ms after their time", name,
                             clients.late_sends(), operations));
    }
    local_errors = clients.local_errors();
    if (local_errors > 0 && o.progress) {
      o.progress(fmt::format(
          "{}: warning: {} attempts could not connect for want of this machine's descriptors, "
          "ports or memory (summary.json's local_errors): the real run is not the system's",
          name, local_errors));
    }
  }
  f.stop_all();
  if (!failure.empty()) throw std::runtime_error(failure);
  report_services(spec, f, operations, out, result.requests);
  out.field("local_errors", static_cast<double>(local_errors));
  result.summary = out.finish(result.end, result.requests);
  sim::add_felt_outage(model, result.end, result.summary);
  return result;
}

}  // namespace

system_load_result run_system_load(const sim::scenario_source& source,
                                   const std::vector<std::string>& sets,
                                   std::optional<std::uint64_t> seed,
                                   const system_load_options& options) {
  sim::scenario whole = sim::scenario::load(source, sets);
  if (whole.model() != "system") {
    throw config::config_error(fmt::format(
        "{}: a scenario of model '{}', not a system (model = \"system\", docs/SYSTEMS.md): "
        "load --system runs systems",
        source.path, whole.model()));
  }
  if (whole.is_sweep() || whole.is_map()) {
    throw config::config_error(
        fmt::format("{}: a {}; load --system runs one system: give its point with --set",
                    source.path, whole.is_map() ? "metastable map" : "sweep"));
  }
  if (seed) whole.set_seed(*seed);
  const std::unique_ptr<sim::model_runner> model = sim::make_model(whole);  // checks it all
  sim::scenario sc = sim::scenario::load(source, sets);  // a reader nothing has marked yet
  system_spec spec = systems::read_system(sc.config());
  std::vector<systems::strategy_edges> edges;
  for (const sim::client_strategy& c : whole.strategies()) {
    edges.push_back({c.name(), c.where(), &c.guards(), &c.edge_settings()});
  }
  spec.resolve(edges);
  if (spec.max_depth > 0) {
    throw config::config_error(fmt::format(
        "{}: run.max_depth: calls that form a cycle do not run for real yet", source.path));
  }
  for (std::size_t s = 0; s < whole.strategies().size(); ++s) {
    for (std::size_t e = 0; e < spec.edges.size(); ++e) {
      if (const auto refused = caller_refusal(spec.edge_guards[s][e])) {
        throw config::config_error(
            fmt::format("{}: strategy {}: edge {}: a real run cannot honour {} yet: {}",
                        whole.strategies()[s].where(), whole.strategies()[s].name(),
                        spec.edges[e].name, refused->key, refused->why));
      }
    }
  }
  check_system_resources(spec);

  report::scenario_result result = sim::result_header(whole);
  result.fingerprint = whole.fingerprint();
  result.outage = model->outage().has_value();
  if (const auto window = model->outage()) {
    result.outage_s = {static_cast<double>(window->start) * 1e-9,
                       static_cast<double>(window->end) * 1e-9};
  }
  const auto wall_start = clock::now();
  for (std::size_t s = 0; s < whole.strategies().size(); ++s) {
    const sim::client_strategy& c = whole.strategies()[s];
    const strategy_outcome run = run_one(spec, s, c.name(), whole.seed(), *model, options);
    result.strategies.push_back(run.summary);
    result.policies.emplace_back(c.name(), c.policy().backoff);
    result.events += run.requests;
    if (run.stopped) {
      report::run_stop stop;
      stop.reason = report::stop_reason::interrupted;
      stop.signal = options.stop_signal;
      stop.strategy = c.name();
      stop.at_s = static_cast<double>(run.end) * 1e-9;
      for (std::size_t n = s + 1; n < whole.strategies().size(); ++n) {
        stop.not_run.push_back(whole.strategies()[n].name());
      }
      result.stopped = stop;
      break;
    }
  }
  result.wall_s = std::chrono::duration<double>(clock::now() - wall_start).count();
  system_load_result both{std::move(result), std::nullopt};
  if (options.compare && !both.real.stopped) {
    sim::scenario again = sim::scenario::load(source, sets);
    if (seed) again.set_seed(*seed);
    both.simulated = sim::run_scenario(again, {});
  }
  return both;
}

}  // namespace backoff::net
