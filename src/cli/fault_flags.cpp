// SPDX-License-Identifier: Apache-2.0
#include "fault_flags.hpp"

#include <fmt/format.h>

#include <iostream>

#include "backoff/error.hpp"
#include "commands.hpp"
#include "typed_options.hpp"

namespace backoff::cli {

void add_fault_flags(CLI::App* sub, fault_flag_values& values) {
  const std::string group = "Faults (docs/NETWORK.md, Faults on demand)";
  sub->add_option("--errors", values.errors,
                  "Answer a share of requests (serve: /api; proxy: all but its metrics path) with "
                  "an error status: RATE[:STATUS], such as 5%:503 (status 503 by default); "
                  "repeatable")
      ->group(group);
  sub->add_option("--latency", values.latency,
                  "Add latency before each answer: a duration (100ms) or a distribution: "
                  "exponential(mean=50ms), uniform(lo=10ms, hi=50ms), lognormal(median=20ms, "
                  "sigma=1), pareto(scale=10ms, shape=1.5), with rate=10% for a share; repeatable")
      ->group(group);
  sub->add_option("--partial-outage", values.partial,
                  "Fail the requests of one key: 'header=x-shard, value=[3, 7]' or "
                  "'path=/api/users/42', with status=503 (default) and rate=; repeatable")
      ->group(group);
  sub->add_option(
         "--outage", values.outage,
         "An outage window from the start: START+LENGTH[:STATUS|reset|hang|pause], such as "
         "10s+5s (503), 10s+5s:reset (connections reset), 10s+5s:hang (held until it "
         "ends); repeatable")
      ->group(group);
  sub->add_option("--slow-body", values.slow_body,
                  "Send a body of SIZE at SPEED: SIZE@SPEED such as 16KiB@4KiB/s; repeatable")
      ->group(group);
  sub->add_option("--fault", values.fault,
                  "Any fault as a spec: errors(...), latency(...), partial(...), outage(...), "
                  "slow_body(...); on for the whole run; repeatable")
      ->group(group);
  sub->add_option("--faults", values.schedule,
                  "A fault schedule (TOML: [[fault]] entries with at, for or until, and fault)")
      ->check(not_empty("a file"))
      ->group(group);
  sub->add_flag("--envoy-fault-headers", values.envoy_headers,
                "Obey Envoy's fault headers (x-envoy-fault-abort-request, "
                "x-envoy-fault-delay-request and their -percentage headers): any client can "
                "then fail requests")
      ->group(group);
  add_seed_option(*sub, "--fault-seed", values.seed,
                  "Seed of the faults' draws (which requests fail, the latencies)")
      ->capture_default_str()
      ->group(group);
}

std::optional<faults::fault_plan> build_fault_plan(const fault_flag_values& values,
                                                   std::string_view command) {
  std::optional<faults::fault_plan> plan = read_fault_flags(values, command);
  if (!plan) return std::nullopt;
  if (const auto why = faults::network_refusal(*plan)) {
    std::cerr << "backoff " << command << ": " << *why << '\n';
    return std::nullopt;
  }
  return plan;
}

std::optional<faults::fault_plan> read_fault_flags(const fault_flag_values& values,
                                                   std::string_view command) {
  faults::fault_plan plan;
  try {
    if (values.schedule) plan = faults::read_fault_schedule(*values.schedule);
  } catch (const faults::fault_schedule_error& e) {
    std::cerr << "backoff " << command << ": --faults: " << e.what() << '\n';
    return std::nullopt;
  }
  const auto add = [&](std::string_view flag, const std::vector<std::string>& texts,
                       auto parse) -> bool {
    for (const std::string& text : texts) {
      try {
        plan.faults.push_back(parse(text));
      } catch (const parse_error& e) {
        std::cerr << "backoff " << command << ": " << flag << ": " << e.what() << '\n';
        return false;
      }
    }
    return true;
  };
  const auto whole_run = [](auto parse) {
    return [parse](const std::string& text) { return faults::scheduled_fault{{}, parse(text)}; };
  };
  if (!add("--errors", values.errors, whole_run(faults::parse_errors_flag)) ||
      !add("--latency", values.latency, whole_run(faults::parse_latency_flag)) ||
      !add("--partial-outage", values.partial, whole_run(faults::parse_partial_flag)) ||
      !add("--outage", values.outage, faults::parse_outage_flag) ||
      !add("--slow-body", values.slow_body, whole_run(faults::parse_slow_body_flag)) ||
      !add("--fault", values.fault, whole_run(faults::parse_fault))) {
    return std::nullopt;
  }
  plan.envoy_headers = values.envoy_headers;
  return plan;
}

void print_fault_plan(const faults::fault_plan& plan, std::string_view command) {
  std::string text;
  for (const auto& f : plan.faults)
    text += fmt::format("backoff {}: fault {}\n", command, faults::describe(f));
  if (plan.envoy_headers) {
    text += fmt::format("backoff {}: obeying Envoy's fault headers (x-envoy-fault-*)\n", command);
  }
  std::cerr << text << std::flush;
}

}  // namespace backoff::cli
