// SPDX-License-Identifier: Apache-2.0
#include "serve_system.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/address.hpp>
#include <iostream>
#include <map>
#include <memory>
#include <string_view>

#include "backoff/duration.hpp"
#include "backoff/random.hpp"
#include "backoff/spelling.hpp"
#include "commands.hpp"
#include "config/config_reader.hpp"
#include "listening_command.hpp"
#include "output.hpp"
#include "scenario_files.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/strategy.hpp"
#include "systems/system_spec.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace {

// Plain serve's own service and guards, which a system's service does not use: its keys say how
// it serves.
constexpr std::array<std::string_view, 11> seed_server_flags = {"--limit",
                                                                "--factor",
                                                                "--base-delay",
                                                                "--k",
                                                                "--tick",
                                                                "--max-busy",
                                                                "--threads",
                                                                "--reject-status",
                                                                "--expired-cost",
                                                                "--retry-after",
                                                                "--cancel-on-disconnect"};

// The keys of [service.NAME] as flags, and the key each one writes.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> key_flags = {{
    {"--workers", "workers"},
    {"--queue", "queue"},
    {"--accept-limit", "max_connections"},
    {"--discipline", "discipline"},
    {"--service-time", "service_time"},
    {"--admission", "limit"},
}};

// The service NAME of the system file (a file, or a built-in system scenario, with its knobs
// set), checked whole as `backoff sim` checks it; `seed`: the service's and replica's stream,
// from --fault-seed when given (`seed_flag`), else from the scenario's seed.
// Throws config_error (or parse_error) with one line.
struct chosen {
  systems::service_spec service;
  std::vector<net::downstream_spec> calls;
};

// "HOST:PORT[,HOST:PORT...]" of --upstream NAME=...: the called service's replicas.
std::vector<boost::asio::ip::tcp::endpoint> upstream_endpoints(const std::string& name,
                                                               const std::string& text) {
  std::vector<boost::asio::ip::tcp::endpoint> out;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string one = text.substr(from, comma - from);
    const std::size_t colon = one.rfind(':');
    boost::system::error_code ec;
    std::string host = colon == std::string::npos ? one : one.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    const auto address = boost::asio::ip::make_address(host, ec);
    unsigned long port = 0;
    const std::string digits = colon == std::string::npos ? "" : one.substr(colon + 1);
    const bool port_ok = !digits.empty() && digits.size() <= 5 &&
                         digits.find_first_not_of("0123456789") == std::string::npos &&
                         (port = std::stoul(digits)) > 0 && port < 65536;
    if (ec || !port_ok) {
      throw config::config_error(fmt::format(
          "--upstream {}: {} is not HOST:PORT (an IP address and a port, e.g. 127.0.0.1:8081)",
          name, quote_for_message(one)));
    }
    out.emplace_back(address, static_cast<std::uint16_t>(port));
    from = comma + 1;
  }
  return out;
}

// The service's calls: each to the replicas --upstream names, with its edge's guards under the
// strategy served. What serve's calls cannot do yet is refused in one line.
std::vector<net::downstream_spec> calls_of(const service_flags& o, systems::system_spec& spec,
                                           const systems::service_spec& s,
                                           const sim::scenario& sc) {
  std::vector<systems::strategy_edges> strategies;
  for (const sim::client_strategy& c : sc.strategies()) {
    strategies.push_back({c.name(), c.where(), &c.guards(), &c.edge_settings()});
  }
  spec.resolve(strategies);
  std::size_t chosen = 0;
  if (o.strategy) {
    std::vector<std::string_view> names;
    for (const auto& c : sc.strategies()) names.push_back(c.name());
    const auto at = std::find(names.begin(), names.end(), *o.strategy);
    if (at == names.end()) {
      throw config::config_error(
          fmt::format("--strategy {}: {} has no such strategy{}", quote_for_message(*o.strategy),
                      quote_for_message(*o.system), did_you_mean(*o.strategy, names)));
    }
    chosen = static_cast<std::size_t>(at - names.begin());
  }
  std::map<std::string, std::string, std::less<>> upstreams;
  for (const std::string& u : o.upstreams) {
    const std::size_t eq = u.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw config::config_error(fmt::format(
          "--upstream {}: expected NAME=HOST:PORT[,HOST:PORT...]", quote_for_message(u)));
    }
    upstreams[u.substr(0, eq)] = u.substr(eq + 1);
  }
  std::vector<net::downstream_spec> calls;
  for (const systems::call_spec& c : s.calls) {
    const systems::service_spec& to = spec.services[c.to];
    const auto given = upstreams.find(to.name);
    if (given == upstreams.end()) {
      throw config::config_error(fmt::format(
          "--service {}: it calls {}: say where with --upstream {}=HOST:PORT[,HOST:PORT...]",
          s.name, to.name, to.name));
    }
    const backoff::strategy& guards = spec.edge_guards[chosen][c.edge];
    if (const auto refused = net::caller_refusal(guards)) {
      throw config::config_error(fmt::format(
          "--service {}: edge {} under strategy {}: serve's calls cannot honour {}: {}", s.name,
          spec.edges[c.edge].name, sc.strategies()[chosen].name(), refused->key, refused->why));
    }
    calls.push_back({c, to.name, to.balance, upstream_endpoints(to.name, given->second), guards,
                     spec.edge_options_of[chosen][c.edge], to.ejection});
  }
  return calls;
}

chosen file_service(const service_flags& o, const std::uint64_t* seed_flag, std::uint64_t& seed) {
  const sim::scenario_source source = resolve_scenario(*o.system);
  {
    sim::scenario whole = sim::scenario::load(source, o.sets);
    if (whole.model() != "system") {
      throw config::config_error(fmt::format(
          "--system {}: a scenario of model '{}', not a system file (model = \"system\", "
          "docs/SYSTEMS.md)",
          quote_for_message(*o.system), whole.model()));
    }
    if (whole.is_sweep()) {
      throw config::config_error(
          fmt::format("--system {}: a sweep; serve runs one system: give its point with --set",
                      quote_for_message(*o.system)));
    }
    sim::check_scenario(whole);
  }
  sim::scenario sc = sim::scenario::load(source, o.sets);  // a reader nothing has marked yet
  systems::system_spec spec = systems::read_system(sc.config());
  std::vector<std::string_view> names;
  for (const systems::service_spec& s : spec.services) names.push_back(s.name);
  const auto named = std::find(names.begin(), names.end(), *o.service);
  if (named == names.end()) {
    throw config::config_error(
        fmt::format("--service {}: {} has no such service{}", quote_for_message(*o.service),
                    quote_for_message(*o.system), did_you_mean(*o.service, names)));
  }
  const auto index = static_cast<std::uint64_t>(named - names.begin());
  systems::service_spec s = spec.services[index];
  if (o.replica >= s.replicas) {
    throw config::config_error(fmt::format("--replica {}: service {} has {} replica{} (0 to {})",
                                           o.replica, s.name, s.replicas,
                                           s.replicas == 1 ? "" : "s", s.replicas - 1));
  }
  std::vector<net::downstream_spec> calls = calls_of(o, spec, s, sc);
  seed = derive_seed(seed_flag != nullptr ? *seed_flag : sc.seed(), (index << 32) | o.replica);
  return {std::move(s), std::move(calls)};
}

// The service the flags describe, read as a file's [service.serve] table: what a flag means is
// what its key means. Messages name the flag. Throws config_error.
systems::service_spec flag_service(const service_flags& o, const faults::fault_plan& plan) {
  toml::table service;
  std::map<std::string, std::string, std::less<>> named;
  const auto put = [&](std::string_view flag, std::string_view key, auto value) {
    service.insert(key, value);
    named["service.serve." + std::string(key)] = std::string(flag);
  };
  const auto number = [](std::uint32_t n) { return static_cast<std::int64_t>(n); };
  if (o.workers) put("--workers", "workers", number(*o.workers));
  if (o.queue) put("--queue", "queue", number(*o.queue));
  if (o.accept_limit) put("--accept-limit", "max_connections", number(*o.accept_limit));
  if (o.discipline) put("--discipline", "discipline", *o.discipline);
  if (o.service_time) put("--service-time", "service_time", *o.service_time);
  if (o.admission) put("--admission", "limit", *o.admission);
  if (!plan.faults.empty()) {
    toml::array entries;
    for (const faults::scheduled_fault& f : plan.faults) {
      toml::table entry;
      if (f.when.start > duration{0}) entry.insert("at", format_duration(f.when.start));
      if (f.when.end != duration::max()) entry.insert("until", format_duration(f.when.end));
      entry.insert("fault", f.what.spec);
      entries.push_back(std::move(entry));
    }
    service.insert("faults", std::move(entries));
    named["service.serve.faults"] = "the fault flags";
  }
  auto root = std::make_shared<toml::table>();
  root->insert("service", toml::table{{"serve", std::move(service)}});
  // The reader wants a client group and its edge; a server never reads them.
  root->insert("clients", toml::array{toml::table{
                              {"to", "serve"}, {"arrivals", "poisson(rate=1)"}, {"edge", "e"}}});
  root->insert("edge", toml::table{{"e", toml::table{{"max_attempts", 1}}}});
  config::config_reader keys{root, "serve", std::move(named)};
  return systems::read_system(keys).services.at(0);
}

// The service to serve, its seed in `seed`; nullopt after one line on stderr.
std::optional<chosen> chosen_service(const service_flags& o, const fault_flag_values& faults,
                                     const CLI::App& serve, std::uint64_t& seed) {
  const auto refuse = [](const std::string& why) {
    std::cerr << "backoff serve: " << why << '\n';
    return std::nullopt;
  };
  for (const std::string_view flag : seed_server_flags) {
    if (serve.count(std::string(flag)) > 0) {
      return refuse(std::string(flag) + ": a system's service serves as its keys say (" +
                    "--service-time, --workers, ... or a file's [service.NAME]); drop it");
    }
  }
  const std::optional<faults::fault_plan> plan = read_fault_flags(faults, "serve");
  if (!plan) return std::nullopt;
  if (faults.envoy_headers) {
    return refuse("--envoy-fault-headers: a system's service takes its faults from its keys");
  }
  try {
    if (o.system) {
      for (const auto& [flag, key] : key_flags) {
        if (serve.count(std::string(flag)) > 0) {
          return refuse(fmt::format("{}: with --system the file says it: --set service.{}.{}=...",
                                    flag, o.service.value_or("NAME"), key));
        }
      }
      if (!o.service) return refuse("--system needs --service NAME (which of its services)");
      if (!plan->faults.empty()) {
        return refuse(
            "the fault flags do not go with --system: its service's faults are in the "
            "file (service.NAME.errors and faults)");
      }
      return file_service(o, serve.count("--fault-seed") > 0 ? &faults.seed : nullptr, seed);
    }
    if (o.service || serve.count("--replica") > 0 || !o.sets.empty()) {
      return refuse("--service, --replica and --set name a service of --system FILE");
    }
    if (!o.upstreams.empty() || o.strategy) {
      return refuse("--upstream and --strategy go with --system FILE, whose service calls others");
    }
    seed = faults.seed;
    return chosen{flag_service(o, *plan), {}};
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
}

}  // namespace

void add_service_flags(CLI::App* sub, service_flags& f) {
  const std::string group = "A system's service (docs/NETWORK.md)";
  sub->add_option("--system", f.system,
                  "Serve a service of this system file (or built-in system scenario): its "
                  "workers, queue, discipline, limits, service time and faults")
      ->check(not_empty("a file or a built-in scenario"))
      ->group(group);
  sub->add_option("--service", f.service, "With --system: the service to serve")->group(group);
  add_count_option<std::uint32_t>(*sub, "--replica", f.replica,
                                  "With --system: which replica of the service (from 0)", 0,
                                  UINT32_MAX - 1)
      ->group(group);
  sub->add_option("--upstream", f.upstreams,
                  "With --system: where a service it calls listens, NAME=HOST:PORT[,HOST:PORT...] "
                  "(its replicas; repeatable)")
      ->group(group);
  sub->add_option("--strategy", f.strategy,
                  "With --system: the [[strategy]] whose edge guards its calls run (default: the "
                  "first)")
      ->group(group);
  sub->add_option("--set", f.sets,
                  "With --system: override a key of the file by its dotted path, e.g. --set "
                  "service.api.workers=4 (repeatable)")
      ->group(group);
  add_count_option<std::uint32_t>(*sub, "--workers", f.workers,
                                  "Requests served at once; more wait in the queue (0: no limit)",
                                  0, 100'000'000)
      ->group(group);
  add_count_option<std::uint32_t>(*sub, "--queue", f.queue,
                                  "Requests that wait for a worker; more are shed with 503 "
                                  "(default 1000)",
                                  0, 100'000'000)
      ->group(group);
  add_count_option<std::uint32_t>(*sub, "--accept-limit", f.accept_limit,
                                  "Requests held at most (queued, served); the connection of one "
                                  "more is reset (default: none)",
                                  1, 100'000'000)
      ->group(group);
  sub->add_option("--discipline", f.discipline,
                  "Which waiting request a free worker takes: fifo, lifo, adaptive-lifo, "
                  "codel(target=5ms, interval=100ms)")
      ->group(group);
  sub->add_option("--service-time", f.service_time,
                  "How long a request's work takes: a distribution, e.g. 20ms, "
                  "exponential(mean=20ms), lognormal(median=4ms, sigma=0.5)")
      ->group(group);
  sub->add_option(
         "--admission", f.admission,
         "Shed before any work: concurrency(max=N), or adaptive(kind=aimd|vegas|gradient2, "
         "...), the library's limit")
      ->group(group);
}

bool wants_a_service(const service_flags& f, const CLI::App& serve) {
  if (f.system || f.service || !f.sets.empty() || !f.upstreams.empty() || f.strategy ||
      serve.count("--replica") > 0) {
    return true;
  }
  return std::any_of(key_flags.begin(), key_flags.end(),
                     [&](const auto& flag) { return serve.count(std::string(flag.first)) > 0; });
}

int serve_a_service(const service_flags& flags, const fault_flag_values& faults,
                    const CLI::App& serve, net::server_options options, const std::string& host) {
  std::uint64_t seed = 1;
  std::optional<chosen> service = chosen_service(flags, faults, serve, seed);
  if (!service) return exit_usage;
  options.tier = std::move(service->service);
  options.tier_calls = std::move(service->calls);
  options.fault_seed = seed;
  options.threads = 1;
  const systems::service_spec& s = *options.tier;
  const std::string replica =
      flags.system ? fmt::format(" replica {} of {}", flags.replica, s.replicas) : "";
  return run_until_stop_signal<net::server>(
      "serve", options, s.faults, [&](const net::server& server) {
        return fmt::format(
            "backoff serve: listening on {} (service {}{}: {} workers, queue {}, work {}; GET "
            "/metrics)\n",
            net::api_url(host, server.port()), s.name, replica,
            s.workers == 0 ? std::string("unbounded") : std::to_string(s.workers), s.queue,
            s.service_time.text);
      });
}

}  // namespace backoff::cli
