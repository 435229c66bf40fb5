// SPDX-License-Identifier: Apache-2.0
#include "twin_comparison.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "csv.hpp"
#include "text_table.hpp"

namespace backoff::report {
namespace {

constexpr double totals_bound = 0.15;    // success rate, load, goodput
constexpr double services_bound = 0.25;  // each service's amplification

std::optional<double> field_of(const strategy_summary& s, std::string_view name) {
  for (const model_field& f : s.fields) {
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

std::string number_text(const std::optional<double>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}

std::string short_text(const std::optional<double>& v) {
  return v ? fmt::format("{:.4g}", *v) : std::string("-");
}

}  // namespace

std::optional<double> twin_row::ratio() const {
  if (!simulated || !real || *simulated == 0) return std::nullopt;
  return *real / *simulated;
}

bool twin_row::agrees() const {
  if (!bound) return true;
  if (!simulated || !real) return simulated.has_value() == real.has_value();
  if (metric == "recovered") return *simulated == *real;
  if (*simulated == 0) return *real == 0;
  return std::abs(*real / *simulated - 1.0) <= *bound + 1e-12;
}

std::vector<twin_row> compare_twins(const scenario_result& simulated, const scenario_result& real) {
  std::vector<twin_row> rows;
  for (const strategy_summary& r : real.strategies) {
    const strategy_summary* s = nullptr;
    for (const strategy_summary& candidate : simulated.strategies) {
      if (candidate.name == r.name) s = &candidate;
    }
    if (s == nullptr) continue;
    const auto total = [&](std::string metric, std::optional<double> sim_value,
                           std::optional<double> real_value, std::optional<double> bound = {}) {
      rows.push_back({r.name, "", std::move(metric), sim_value, real_value, bound});
    };
    const auto p = [](const strategy_summary& x, double latency_summary::*q) {
      return x.latency_s ? std::optional<double>((*x.latency_s).*q) : std::nullopt;
    };
    total("operations", static_cast<double>(s->operations), static_cast<double>(r.operations));
    total("success_rate", s->success_rate(), r.success_rate(), totals_bound);
    total("load", s->attempts_per_operation, r.attempts_per_operation, totals_bound);
    total("goodput_per_s", s->goodput_per_s, r.goodput_per_s, totals_bound);
    total("latency_s.p50", p(*s, &latency_summary::p50), p(r, &latency_summary::p50));
    total("latency_s.p99", p(*s, &latency_summary::p99), p(r, &latency_summary::p99));
    if (real.outage) {
      total("recovery_s", s->recovery_s, r.recovery_s);
      total("recovered", s->recovery_s ? 1.0 : 0.0, r.recovery_s ? 1.0 : 0.0, 0.0);
    }
    for (const service_series& service : r.services) {
      const std::string prefix = "services." + service.service + ".";
      for (const std::string_view metric :
           {"arrivals", "attempts", "completed", "rejected", "failed", "amplification",
            "peak_in_flight", "latency_s.p50", "latency_s.p99"}) {
        const std::string name = prefix + std::string(metric);
        rows.push_back(
            {r.name, service.service, std::string(metric), field_of(*s, name), field_of(r, name),
             metric == "amplification" ? std::optional<double>(services_bound) : std::nullopt});
      }
    }
  }
  return rows;
}

void write_comparison_csv(const std::vector<twin_row>& rows, std::ostream& out) {
  std::string text = "strategy,service,metric,simulated,real,ratio\n";
  for (const twin_row& row : rows) {
    csv_append(text, row.strategy);
    text += ',';
    csv_append(text, row.service);
    text += ',';
    csv_append(text, row.metric);
    text += fmt::format(",{},{},{}\n", number_text(row.simulated), number_text(row.real),
                        number_text(row.ratio()));
  }
  out << text;
}

std::string agreement_table(const std::vector<twin_row>& rows) {
  text_table t;
  t.left_columns = 3;
  t.rows.push_back(
      {"strategy", "service", "metric", "simulated", "real", "ratio", "bound", "within"});
  std::size_t bounded = 0, within = 0;
  for (const twin_row& row : rows) {
    if (!row.bound) continue;
    ++bounded;
    const bool ok = row.agrees();
    within += ok ? 1 : 0;
    t.rows.push_back(
        {row.strategy, row.service.empty() ? "-" : row.service, row.metric,
         short_text(row.simulated), short_text(row.real), short_text(row.ratio()),
         row.metric == "recovered" ? "same" : fmt::format("{:.0f} %", *row.bound * 100),
         ok ? "yes" : "NO"});
  }
  return t.render() + fmt::format("{} of {} within bounds\n", within, bounded);
}

bool twins_agree(const std::vector<twin_row>& rows) {
  for (const twin_row& row : rows) {
    if (!row.agrees()) return false;
  }
  return true;
}

}  // namespace backoff::report
