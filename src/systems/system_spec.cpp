// SPDX-License-Identifier: Apache-2.0
// Reading a system scenario (system_spec.hpp). Each reader takes the keys of one table through
// the scenario's config_reader, so positions, --set labels and unknown-key messages are the
// simulator's usual ones.
#include "system_spec.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "backoff/spelling.hpp"

namespace backoff::systems {
namespace {

constexpr std::int64_t most_replicas = 10'000;
constexpr std::int64_t most_capacity = 100'000'000;
constexpr std::size_t most_groups = 65'535;  // a group's index travels in 16 bits of an event

std::filesystem::path folder_of(const config_reader& keys) {
  const std::filesystem::path p(keys.path());
  return p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
}

// A TOML basic string holding `text`.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// One of `names` (the enum's order), or fail with the list and a did-you-mean.
template <class Enum, std::size_t N>
Enum choose(config_reader& keys, const std::string& key, std::string_view fallback,
            const std::array<std::string_view, N>& names) {
  const std::string text = keys.string(key, fallback);
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<Enum>(i);
  }
  std::string list;
  for (auto n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  keys.fail(key, "'" + text + "' is none of " + list +
                     did_you_mean(text, std::span<const std::string_view>(names.data(), N)));
}

// A spec key: a string, or a table of the same keys ({ kind = "lognormal", median = "4ms",
// sigma = 0.5 }), so that a knob can set one number of it. The spec's text either way.
std::string spec_text(config_reader& keys, const std::string& key, std::string_view fallback) {
  if (!keys.is_table(key)) return keys.string(key, fallback);
  const std::string kind = keys.string(key + ".kind", "");
  if (kind.empty()) keys.fail(key, "a table form needs kind = \"...\"");
  std::string args;
  for (const std::string& f : keys.table_keys(key)) {
    if (f == "kind") continue;
    args += (args.empty() ? "" : ", ") + f + "=" + keys.scalar_text(key + "." + f);
  }
  return kind + "(" + args + ")";
}

distribution read_distribution(config_reader& keys, const std::string& key,
                               std::string_view fallback) {
  const std::string text = spec_text(keys, key, fallback);
  try {
    return parse_distribution(text, folder_of(keys));
  } catch (const parse_error& e) {
    keys.fail(key, e.what());
  }
}

time_ns positive_time(config_reader& keys, const std::string& key, duration fallback) {
  return keys.duration_value(key, fallback, duration{1}).count();
}

discipline_spec read_discipline(config_reader& keys, const std::string& key) {
  const std::string text = keys.string(key, "fifo");
  discipline_spec d;
  try {
    const spec_call call = parse_spec_call(text, "discipline");
    static constexpr std::array<std::string_view, 4> names{"fifo", "lifo", "adaptive-lifo",
                                                           "codel"};
    const auto* it = std::find(names.begin(), names.end(), call.name);
    if (it == names.end()) {
      throw parse_error("discipline \"" + text + "\": '" + call.name +
                        "' is none of fifo, lifo, adaptive-lifo, codel" +
                        did_you_mean(call.name, names));
    }
    d.kind = static_cast<discipline_kind>(it - names.begin());
    for (const spec_argument& arg : call.arguments) {
      if (d.kind == discipline_kind::fifo || d.kind == discipline_kind::lifo ||
          (arg.key != "target" && arg.key != "interval") ||
          (d.kind == discipline_kind::adaptive_lifo && arg.key == "target")) {
        throw parse_error("discipline \"" + text + "\": " + call.name + " takes no '" + arg.key +
                          "'");
      }
      const duration v = spec_duration(text, arg, "discipline");
      if (v.count() <= 0)
        throw parse_error("discipline \"" + text + "\": " + arg.key + " must be above 0s");
      (arg.key == "target" ? d.target : d.interval) = v.count();
    }
  } catch (const parse_error& e) {
    keys.fail(key, e.what());
  }
  return d;
}

void read_admission(config_reader& keys, const std::string& key, service_spec& s) {
  const std::string text = keys.string(key, "none");
  try {
    const spec_call call = parse_spec_call(text, "limit");
    if (call.name == "none" && call.arguments.empty()) return;
    if (call.name == "concurrency") {
      if (call.arguments.size() != 1 ||
          (call.arguments[0].key != "max" && call.arguments[0].key != "n")) {
        throw parse_error("limit \"" + text + "\": write concurrency(max=N)");
      }
      const double n = spec_number(text, call.arguments[0], "limit");
      if (!(n >= 1) || n > static_cast<double>(most_capacity) || n != std::floor(n)) {
        throw parse_error("limit \"" + text + "\": max must be a whole number from 1 to 10^8");
      }
      s.admission = admission_kind::concurrency;
      s.concurrency = static_cast<std::uint32_t>(n);
      return;
    }
    if (call.name == "adaptive" || call.name == "limit") {
      // The library's adaptive limit (concurrency_limit.hpp), with its keys.
      const std::size_t open = text.find('(');
      const std::string inner = open == std::string::npos ? "" : text.substr(open);
      s.adaptive = parse_limit("limit" + inner);
      s.admission = admission_kind::adaptive;
      return;
    }
    throw parse_error(
        "limit \"" + text + "\": '" + call.name +
        "' is none of none, concurrency(max=N), adaptive(kind=aimd|vegas|gradient2, ...)");
  } catch (const parse_error& e) {
    keys.fail(key, e.what());
  }
}

void read_ejection(config_reader& keys, const std::string& key, service_spec& s) {
  const std::string text = keys.string(key, "none");
  try {
    const spec_call call = parse_spec_call(text, "outlier_ejection");
    if (call.name == "none" && call.arguments.empty()) return;
    if (call.name != "consecutive") {
      throw parse_error("outlier_ejection \"" + text +
                        "\": write none or "
                        "consecutive(failures=5, base=30s, max_share=10%)");
    }
    s.ejection.on = true;
    for (const spec_argument& arg : call.arguments) {
      if (arg.key == "failures") {
        const double n = spec_number(text, arg, "outlier_ejection");
        if (!(n >= 1) || n > 1e6 || n != std::floor(n)) {
          throw parse_error("outlier_ejection \"" + text +
                            "\": failures must be a whole number from 1");
        }
        s.ejection.failures = static_cast<std::uint32_t>(n);
      } else if (arg.key == "base") {
        s.ejection.base = spec_duration(text, arg, "outlier_ejection").count();
        if (s.ejection.base <= 0)
          throw parse_error("outlier_ejection \"" + text + "\": base must be above 0s");
      } else if (arg.key == "max_share") {
        s.ejection.max_share = spec_fraction(text, arg, "outlier_ejection");
      } else {
        throw parse_error("outlier_ejection \"" + text + "\": unknown key '" + arg.key + "'" +
                          did_you_mean(arg.key, {"failures", "base", "max_share"}));
      }
    }
  } catch (const parse_error& e) {
    keys.fail(key, e.what());
  }
}

// `errors = "5%:503"` (serve's --errors) and `faults`: a schedule file's path, or its entries
// inline: [{ at = "10s", for = "5s", fault = "outage()" }, ...].
void read_faults(config_reader& keys, const std::string& prefix, service_spec& s) {
  // errors: serve's --errors shorthand ("5%:503"), or a fault spec's table ({ rate = 0.05,
  // status = 503 }) whose rate a knob can reach.
  const std::string errors_key = prefix + ".errors";
  if (keys.has(errors_key)) {
    try {
      if (keys.is_table(errors_key)) {
        std::string args;
        for (const std::string& f : keys.table_keys(errors_key)) {
          args += (args.empty() ? "" : ", ") + f + "=" + keys.scalar_text(errors_key + "." + f);
        }
        s.faults.faults.push_back({{}, faults::parse_fault("errors(" + args + ")")});
      } else {
        s.faults.faults.push_back({{}, faults::parse_errors_flag(keys.string(errors_key, ""))});
      }
    } catch (const parse_error& e) {
      keys.fail(errors_key, e.what());
    }
  }
  const std::string key = prefix + ".faults";
  keys.consume(key);
  if (!keys.has(key)) return;
  try {
    if (const std::size_t n = keys.is_tables(key) ? keys.array_size(key) : 0; n > 0) {
      std::string text;
      for (std::size_t i = 0; i < n; ++i) {
        const std::string entry = key + "." + std::to_string(i);
        text += "[[fault]]\n";
        for (const std::string& f : keys.table_keys(entry)) {
          text += f + " = " +
                  (f == "fault" && keys.is_table(entry + ".fault")
                       ? toml_string(spec_text(keys, entry + ".fault", ""))
                       : keys.scalar_toml(entry + "." + f)) +
                  "\n";
        }
      }
      const faults::fault_plan plan = faults::parse_fault_schedule(text, keys.where(key));
      s.faults.faults.insert(s.faults.faults.end(), plan.faults.begin(), plan.faults.end());
    } else {
      std::filesystem::path file(keys.string(key, ""));
      if (file.is_relative()) file = folder_of(keys) / file;
      const faults::fault_plan plan = faults::read_fault_schedule(file.string());
      s.faults.faults.insert(s.faults.faults.end(), plan.faults.begin(), plan.faults.end());
    }
  } catch (const std::exception& e) {
    keys.fail(key, e.what());
  }
  for (const auto& f : s.faults.faults) {
    if (f.what.kind == faults::fault_kind::outage && f.what.action != faults::outage_action::hang &&
        !s.outage) {
      s.outage = f.when;
    }
    if (f.what.kind == faults::fault_kind::outage &&
        f.what.action == faults::outage_action::pause) {
      s.pauses.push_back(f.when);
    }
    if (f.what.kind == faults::fault_kind::slow_body) {
      keys.fail(key, "slow_body shapes an HTTP body, and a system's services answer with none");
    }
    if (f.what.kind == faults::fault_kind::capacity) {
      s.capacity_faults = true;
      if (f.when.end != duration::max()) s.capacity_returns.push_back(f.when.end.count());
    }
  }
  std::sort(s.pauses.begin(), s.pauses.end(),
            [](const faults::fault_window& a, const faults::fault_window& b) {
              return a.start < b.start;
            });
}

// The keys after Isaev's server (server.py): faults decided when the work ends, and what work a
// deadline that passed (or passes during the work) still costs.
void read_isaev_keys(config_reader& keys, const std::string& p, service_spec& s) {
  s.faults_after_work =
      choose<int>(keys, p + ".faults_decided", "on-arrival",
                  std::array<std::string_view, 2>{"on-arrival", "after-work"}) == 1;
  if (s.faults_after_work) {
    for (const auto& f : s.faults.faults) {
      if (f.what.kind == faults::fault_kind::outage &&
          (f.what.action == faults::outage_action::hang ||
           f.what.action == faults::outage_action::pause)) {
        keys.fail(p + ".faults_decided",
                  "after-work cannot hold a request before its work (outage action=hang or "
                  "pause); use on-arrival or another action");
      }
    }
  }
  const std::string expired = p + ".expired_cost";
  if (keys.has(expired) && keys.scalar_text(expired).ends_with('%')) {
    const std::string text = keys.scalar_text(expired);
    char* end = nullptr;
    const double share = std::strtod(text.c_str(), &end) / 100.0;
    if (end != text.c_str() + text.size() - 1 || !(share >= 0 && share <= 1)) {
      keys.fail(expired,
                "a share of the work is a percentage from 0% to 100%, not \"" + text + "\"");
    }
    s.expired_share = share;
  } else {
    s.expired_cost = keys.duration_value(expired, duration{0}).count();
  }
  if (keys.has(p + ".check_cost")) s.check_cost = keys.number(p + ".check_cost", 0.0, 0.0, 1.0);
}

// capacity(...) takes a share of a bounded worker pool; cold_start(...) slows work whose length
// is drawn when it starts, after the faults were decided.
void check_slowing_faults(config_reader& keys, const std::string& p, const service_spec& s) {
  for (const auto& f : s.faults.faults) {
    if (f.what.kind == faults::fault_kind::capacity && s.workers == 0 && !s.spare_capacity) {
      keys.fail(p + ".faults", f.what.spec +
                                   ": takes a share of the workers, and this service has "
                                   "workers = 0 (no limit); give it workers");
    }
    if (f.what.kind != faults::fault_kind::cold_start) continue;
    if (s.faults_after_work) {
      keys.fail(p + ".faults_decided",
                "after-work decides the faults when the work is over, too "
                "late for " +
                    f.what.spec + " to slow it; use on-arrival");
    }
    if (s.service_time.tick > 0) {
      keys.fail(p + ".faults", f.what.spec +
                                   ": a concurrency curve with tick= times its own "
                                   "work; a cold start slows drawn service times only");
    }
  }
}

// workers, or spare_capacity: workers sized from the offered load once the clients are known.
void read_capacity(config_reader& keys, const std::string& p, service_spec& s) {
  if (keys.has(p + ".spare_capacity")) {
    if (keys.has(p + ".workers")) {
      keys.fail(p + ".spare_capacity", "give workers or spare_capacity, not both");
    }
    s.spare_capacity = keys.number(p + ".spare_capacity", 1.0, 1e-6, 1e6);
    return;
  }
  s.workers = static_cast<std::uint32_t>(keys.integer(p + ".workers", 8, 0, most_capacity));
}

// Isaev's build_input: cpu_count = int(spare * rate * mean service), in doubles left to right.
void size_from_load(config_reader& keys, system_spec& spec) {
  for (std::uint32_t i = 0; i < spec.services.size(); ++i) {
    service_spec& s = spec.services[i];
    if (!s.spare_capacity) continue;
    double rate = 0;
    for (const client_group& g : spec.clients) {
      if (g.to != i) continue;
      if (g.arrivals != arrival_kind::poisson && g.arrivals != arrival_kind::constant) {
        keys.fail("service." + s.name + ".spare_capacity",
                  "sizes from the rate of the open groups calling it; clients " + g.name +
                      " are not poisson or constant");
      }
      rate += g.rate;
    }
    if (rate <= 0) {
      keys.fail("service." + s.name + ".spare_capacity",
                "no client group offers it a rate (services called downstream need workers)");
    }
    const double n = *s.spare_capacity * rate * s.service_time.mean_ns() / 1e9;
    if (!(n < static_cast<double>(most_capacity))) {
      keys.fail("service." + s.name + ".spare_capacity", "gives more than 10^8 workers");
    }
    s.workers = static_cast<std::uint32_t>(std::max(1.0, std::floor(n)));
  }
}

service_spec read_service(config_reader& keys, const std::string& name) {
  const std::string p = "service." + name;
  service_spec s;
  s.name = name;
  s.where = keys.where(p);
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789_-") != std::string::npos) {
    keys.fail(p, "a service's name is letters, digits, '-' and '_' (it names columns and files)");
  }
  s.replicas = static_cast<std::uint32_t>(keys.integer(p + ".replicas", 1, 1, most_replicas));
  s.balance = choose<balance_kind>(
      keys, p + ".balance", "round-robin",
      std::array<std::string_view, 3>{"round-robin", "random", "least-request"});
  read_capacity(keys, p, s);
  s.queue = static_cast<std::uint32_t>(keys.integer(p + ".queue", 1000, 0, most_capacity));
  s.max_connections =
      static_cast<std::uint32_t>(keys.integer(p + ".max_connections", 0, 0, most_capacity));
  s.discipline = read_discipline(keys, p + ".discipline");
  s.service_time = read_distribution(keys, p + ".service_time", "0s");
  read_admission(keys, p + ".limit", s);
  read_faults(keys, p, s);
  read_isaev_keys(keys, p, s);
  check_slowing_faults(keys, p, s);
  read_ejection(keys, p + ".outlier_ejection", s);
  s.fan_out = keys.boolean(p + ".fan_out", false);
  s.work_after_calls =
      choose<int>(keys, p + ".work", "before-calls",
                  std::array<std::string_view, 2>{"before-calls", "after-calls"}) == 1;
  s.retry_skips_work = keys.boolean(p + ".retry_skips_work", false);
  return s;
}

// The calls of every service, once all services and edges are known.
void read_calls(config_reader& keys, system_spec& spec) {
  for (service_spec& s : spec.services) {
    const std::string key = "service." + s.name + ".calls";
    const std::size_t n = keys.array_size(key);
    for (std::size_t i = 0; i < n; ++i) {
      const std::string c = key + "." + std::to_string(i);
      call_spec call;
      const std::string to = keys.string(c + ".to", "");
      const auto target = std::find_if(spec.services.begin(), spec.services.end(),
                                       [&](const service_spec& t) { return t.name == to; });
      if (target == spec.services.end()) {
        std::vector<std::string_view> names;
        for (const auto& t : spec.services) names.push_back(t.name);
        keys.fail(c + ".to", "no service named '" + to + "'" + did_you_mean(to, names));
      }
      call.to = static_cast<std::uint32_t>(target - spec.services.begin());
      const std::string edge = keys.string(c + ".edge", to);
      const auto e = spec.edge_index(edge);
      if (!e) {
        std::vector<std::string_view> known;
        for (const auto& k : spec.edges) known.push_back(k.name);
        keys.fail(c + ".edge", "no [edge." + edge + "]" + did_you_mean(edge, known));
      }
      call.edge = *e;
      call.latency = read_distribution(keys, c + ".latency", "0s");
      call.probability = keys.number(c + ".probability", 1.0, 0.0, 1.0);
      s.calls.push_back(std::move(call));
    }
  }
}

// Calls that come back to a service they started from: refused with the loop named, unless
// run.max_depth bounds them. Also each service's depth (the longest chain from a client).
void check_cycles(config_reader& keys, system_spec& spec) {
  const std::size_t n = spec.services.size();
  std::vector<int> state(n, 0);  // 0 unseen, 1 on the path, 2 done
  std::vector<std::uint32_t> path;
  std::function<void(std::uint32_t)> visit = [&](std::uint32_t v) {
    state[v] = 1;
    path.push_back(v);
    for (const call_spec& c : spec.services[v].calls) {
      if (state[c.to] == 1 && spec.max_depth == 0) {
        std::string loop;
        const auto from = std::find(path.begin(), path.end(), c.to);
        for (auto it = from; it != path.end(); ++it) loop += spec.services[*it].name + " -> ";
        keys.fail("service." + spec.services[v].name + ".calls",
                  "calls form a cycle: " + loop + spec.services[c.to].name +
                      " (set run.max_depth to bound how deep requests go)");
      }
      if (state[c.to] == 0) visit(c.to);
    }
    path.pop_back();
    state[v] = 2;
  };
  for (std::uint32_t v = 0; v < n; ++v) {
    if (state[v] == 0) visit(v);
  }
}

void read_arrivals(config_reader& keys, const std::string& key, client_group& g) {
  const std::string text = spec_text(keys, key, "");
  if (text.empty())
    keys.fail(key,
              "missing: poisson(rate=N), constant(rate=N), "
              "ramp(from=N, to=N, over=T) or closed(users=N)");
  try {
    const spec_call call = parse_spec_call(text, "arrivals");
    static constexpr std::array<std::string_view, 4> names{"poisson", "constant", "ramp", "closed"};
    const auto* it = std::find(names.begin(), names.end(), call.name);
    if (it == names.end()) {
      throw parse_error("arrivals \"" + text + "\": '" + call.name +
                        "' is none of poisson, constant, ramp, closed" +
                        did_you_mean(call.name, names));
    }
    g.arrivals = static_cast<arrival_kind>(it - names.begin());
    const auto rate = [&](const spec_argument& arg) {
      const double r = spec_number(text, arg, "arrivals");
      if (!(r >= 0) || r > 1e9)
        throw parse_error("arrivals \"" + text + "\": " + arg.key +
                          " must be from 0 to 10^9 per second");
      return r;
    };
    bool has_rate = false, has_users = false, has_to = false;
    for (const spec_argument& arg : call.arguments) {
      const bool fits = (arg.key == "rate" && (g.arrivals == arrival_kind::poisson ||
                                               g.arrivals == arrival_kind::constant)) ||
                        ((arg.key == "from" || arg.key == "to" || arg.key == "over") &&
                         g.arrivals == arrival_kind::ramp) ||
                        (arg.key == "users" && g.arrivals == arrival_kind::closed);
      if (!fits)
        throw parse_error("arrivals \"" + text + "\": " + call.name + " takes no '" + arg.key +
                          "'");
      if (arg.key == "rate" || arg.key == "from") {
        g.rate = rate(arg);
        has_rate = true;
      } else if (arg.key == "to") {
        g.rate_to = rate(arg);
        has_to = true;
      } else if (arg.key == "over") {
        g.ramp_over = spec_duration(text, arg, "arrivals").count();
        if (g.ramp_over <= 0) throw parse_error("arrivals \"" + text + "\": over must be above 0s");
      } else {
        const double n = spec_number(text, arg, "arrivals");
        if (!(n >= 1) || n > 1e7 || n != std::floor(n)) {
          throw parse_error("arrivals \"" + text +
                            "\": users must be a whole number from 1 to 10^7");
        }
        g.users = static_cast<std::uint32_t>(n);
        has_users = true;
      }
    }
    if (g.arrivals == arrival_kind::closed ? !has_users : !has_rate) {
      throw parse_error("arrivals \"" + text + "\": " + call.name + " needs " +
                        (g.arrivals == arrival_kind::closed ? "users="
                         : g.arrivals == arrival_kind::ramp ? "from=, to= and over="
                                                            : "rate="));
    }
    if (g.arrivals == arrival_kind::ramp && (g.ramp_over == 0 || !has_to)) {
      throw parse_error("arrivals \"" + text + "\": ramp needs from=, to= and over=");
    }
  } catch (const parse_error& e) {
    keys.fail(key, e.what());
  }
}

void read_client_groups(config_reader& keys, system_spec& spec) {
  const std::size_t n = keys.array_size("clients");
  if (n == 0) keys.fail("clients", "a system needs at least one [[clients]] group");
  if (n > most_groups) keys.fail("clients", "more than 65535 [[clients]] groups");
  for (std::size_t i = 0; i < n; ++i) {
    const std::string p = "clients." + std::to_string(i);
    client_group g;
    g.where = keys.where(p);
    g.name = keys.string(p + ".name", "clients-" + std::to_string(i + 1));
    const std::string to = keys.string(p + ".to", "");
    const auto target = std::find_if(spec.services.begin(), spec.services.end(),
                                     [&](const service_spec& t) { return t.name == to; });
    if (target == spec.services.end()) {
      std::vector<std::string_view> names;
      for (const auto& t : spec.services) names.push_back(t.name);
      keys.fail(p + ".to", "no service named '" + to + "'" + did_you_mean(to, names));
    }
    g.to = static_cast<std::uint32_t>(target - spec.services.begin());
    const std::string edge = keys.string(p + ".edge", "");
    const auto e = spec.edge_index(edge);
    if (!e) {
      std::vector<std::string_view> known;
      for (const auto& k : spec.edges) known.push_back(k.name);
      keys.fail(p + ".edge", edge.empty()
                                 ? "missing: the [edge.NAME] whose guards these clients use"
                                 : "no [edge." + edge + "]" + did_you_mean(edge, known));
    }
    g.edge = *e;
    read_arrivals(keys, p + ".arrivals", g);
    g.think = read_distribution(keys, p + ".think", "0s");
    g.latency = read_distribution(keys, p + ".latency", "0s");
    if (keys.has(p + ".latency_back"))
      g.latency_back = read_distribution(keys, p + ".latency_back", "0s");
    g.instances = static_cast<std::uint32_t>(keys.integer(p + ".instances", 1, 1, 1'000'000));
    g.operations = static_cast<std::uint64_t>(
        keys.integer(p + ".operations", 0, 0, std::numeric_limits<std::int64_t>::max()));
    g.think_first = keys.boolean(p + ".think_first", false);
    g.backoff_from_think = keys.boolean(p + ".backoff_from_think", false);
    if ((g.think_first || g.backoff_from_think) && g.arrivals != arrival_kind::closed) {
      keys.fail(p + (g.think_first ? ".think_first" : ".backoff_from_think"),
                "applies to closed arrivals only (users who think)");
    }
    spec.clients.push_back(std::move(g));
  }
}

}  // namespace

void set_edge_option(edge_options& options, std::string_view key, std::string_view text) {
  const auto pick = [&](std::string_view no, std::string_view yes) {
    if (text == no) return false;
    if (text == yes) return true;
    throw parse_error("expected \"" + std::string(no) + "\" or \"" + std::string(yes) + "\", got " +
                      quote_for_message(text));
  };
  if (key == "on_give_up") {
    options.do_not_retry_on_give_up = pick("retryable", "do-not-retry");
  } else if (key == "breaker_asks") {
    options.breaker_first_tries = pick("every-attempt", "first-tries");
  } else {
    throw parse_error("unknown edge key " + quote_for_message(key));
  }
}

namespace {

// breaker_asks = "first-tries" needs a breaker that refuses attempts, and a loop that makes
// one attempt at a time.
void check_options(const backoff::strategy& g, const edge_options& o) {
  if (!o.breaker_first_tries) return;
  if (!g.breaker) throw parse_error("breaker_asks = \"first-tries\" needs a breaker");
  if (g.breaker->kind != breaker_kind::rate && g.breaker->kind != breaker_kind::consecutive) {
    throw parse_error(
        "breaker_asks = \"first-tries\" asks a breaker before first tries only; "
        "a " +
        std::string(to_string(g.breaker->kind)) +
        " breaker never refuses one (give it kind=rate or consecutive)");
  }
  if (g.hedge || g.window || g.breaker->keyed) {
    throw parse_error(
        "breaker_asks = \"first-tries\" goes with a retry loop, not with a hedge, "
        "a window or a keyed breaker");
  }
}

}  // namespace

void system_spec::resolve(std::span<const strategy_edges> strategies) {
  edge_guards.clear();
  edge_options_of.clear();
  for (const strategy_edges& s : strategies) {
    for (const std::string_view key : backoff::strategy::keys()) {
      if (s.guards->has(key)) {
        throw config_error(
            std::string(s.where) + ": strategy " + std::string(s.name) + ": " + std::string(key) +
            ": a system scenario sets guards per edge: write edge.NAME." + std::string(key));
      }
    }
    std::vector<backoff::strategy> per_edge;
    std::vector<edge_options> options;
    for (const edge_spec& e : edges) {
      per_edge.push_back(e.defaults);
      options.push_back(e.options);
    }
    for (const edge_setting& set : *s.edges) {
      const auto e = edge_index(set.edge);
      if (!e) {
        std::vector<std::string_view> names;
        for (const auto& known : edges) names.push_back(known.name);
        throw config_error(set.where + ": strategy " + std::string(s.name) + ": no [edge." +
                           set.edge + "]" + did_you_mean(set.edge, names));
      }
      try {
        if (std::ranges::find(edge_option_keys, set.key) != std::end(edge_option_keys)) {
          set_edge_option(options[*e], set.key, set.text);
        } else {
          per_edge[*e].set(set.key, set.text);
        }
      } catch (const parse_error& err) {
        throw config_error(set.where + ": strategy " + std::string(s.name) + ": edge." + set.edge +
                           "." + set.key + ": " + err.what());
      }
    }
    for (std::size_t e = 0; e < edges.size(); ++e) {
      try {
        per_edge[e].validate();
        check_options(per_edge[e], options[e]);
      } catch (const parse_error& err) {
        throw config_error(std::string(s.where) + ": strategy " + std::string(s.name) + ": edge " +
                           edges[e].name + ": " + err.what());
      }
    }
    edge_guards.push_back(std::move(per_edge));
    edge_options_of.push_back(std::move(options));
  }
}

system_spec read_system(config_reader& keys) {
  system_spec spec;
  spec.duration = positive_time(keys, "run.duration", std::chrono::seconds{60});
  spec.drain = keys.duration_value("run.drain", std::chrono::seconds{30}).count();
  spec.bucket = positive_time(keys, "run.bucket", std::chrono::seconds{1});
  spec.max_depth = static_cast<std::uint32_t>(keys.integer("run.max_depth", 0, 0, 64));
  if (spec.duration > 30LL * 86'400'000'000'000) keys.fail("run.duration", "is more than 30 days");

  for (const std::string& name : keys.table_keys("edge")) {
    edge_spec e;
    e.name = name;
    const std::string p = "edge." + name;
    e.where = keys.where(p);
    for (const std::string_view key : backoff::strategy::keys()) {
      const std::string k = p + "." + std::string(key);
      if (!keys.has(k)) {
        keys.consume(k);
        continue;
      }
      const std::string text =
          key == "max_attempts"
              ? std::to_string(keys.integer(k, 0, 0, std::numeric_limits<std::uint32_t>::max()))
          : key == "idempotent" ? (keys.boolean(k, true) ? "true" : "false")
                                : keys.string(k, "");
      try {
        e.defaults.set(key, text);
      } catch (const parse_error& err) {
        keys.fail(k, err.what());
      }
    }
    try {
      e.defaults.validate();
    } catch (const parse_error& err) {
      keys.fail(p, err.what());
    }
    for (const std::string_view key : edge_option_keys) {
      const std::string k = p + "." + std::string(key);
      if (!keys.has(k)) continue;
      try {
        set_edge_option(e.options, key, keys.string(k, ""));
      } catch (const parse_error& err) {
        keys.fail(k, err.what());
      }
    }
    try {
      check_options(e.defaults, e.options);
    } catch (const parse_error& err) {
      keys.fail(p, err.what());
    }
    spec.edges.push_back(std::move(e));
  }

  const std::vector<std::string> names = keys.table_keys("service");
  if (names.empty()) keys.fail("service", "a system needs at least one [service.NAME]");
  for (const std::string& name : names) spec.services.push_back(read_service(keys, name));
  read_calls(keys, spec);
  check_cycles(keys, spec);
  read_client_groups(keys, spec);
  size_from_load(keys, spec);
  spec.recovery_hold = positive_time(keys, "recovery.hold", std::chrono::seconds{5});
  spec.warmup = keys.duration_value("phase.warmup", duration{0}).count();
  if (spec.warmup > spec.duration) keys.fail("phase.warmup", "is after run.duration");
  // Depth: the longest chain of calls from a client (1 for a client's service); a loop that
  // run.max_depth allows stops growing there.
  const auto bound =
      spec.max_depth > 0 ? spec.max_depth : static_cast<std::uint32_t>(spec.services.size());
  for (const client_group& g : spec.clients) spec.services[g.to].depth = 1;
  for (std::uint32_t round = 0; round < bound; ++round) {
    for (service_spec& s : spec.services) {
      if (s.depth == 0) continue;
      for (const call_spec& c : s.calls) {
        spec.services[c.to].depth =
            std::max(spec.services[c.to].depth, std::min(s.depth + 1, bound + 1));
      }
    }
  }
  return spec;
}

std::optional<std::uint32_t> system_spec::edge_index(std::string_view name) const {
  for (std::size_t i = 0; i < edges.size(); ++i) {
    if (edges[i].name == name) return static_cast<std::uint32_t>(i);
  }
  return std::nullopt;
}

}  // namespace backoff::systems
