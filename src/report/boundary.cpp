// SPDX-License-Identifier: Apache-2.0
#include "boundary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "backoff/error.hpp"
#include "chart_choice.hpp"
#include "csv.hpp"
#include "ranking.hpp"
#include "result_json.hpp"
#include "text_table.hpp"

namespace backoff::report {

std::optional<std::vector<double>> down_periods(const strategy_summary& s, const down_rule& rule) {
  const time_units w = s.bucket_width;
  if (w <= 0) return std::nullopt;
  const std::vector<series_bucket>& b = s.buckets;
  const time_units down = rule.outage.start;
  // The baseline exactly as recorder::recovery takes it: whole buckets in [down - baseline, down).
  const time_units from = std::max<time_units>(0, down - rule.baseline);
  const auto first = static_cast<std::size_t>((from + w - 1) / w);
  const auto last = static_cast<std::size_t>(down / w);
  if (last <= first || last > b.size()) return std::nullopt;
  double sum = 0;
  for (std::size_t i = first; i < last; ++i) sum += static_cast<double>(b[i].successes);
  const double baseline = sum / static_cast<double>(last - first);
  if (baseline <= 0) return std::nullopt;
  const double threshold = rule.fraction * baseline;
  const auto hold = static_cast<std::size_t>(std::max<time_units>((rule.hold + w - 1) / w, 1));
  const std::size_t complete = std::min(static_cast<std::size_t>(rule.end / w), b.size());

  std::vector<double> periods;
  const double bucket_s = static_cast<double>(w) * s.seconds_per_unit;
  bool in = false;
  std::size_t start = 0, last_down = 0, up_run = 0;
  for (std::size_t i = static_cast<std::size_t>(down / w); i < complete; ++i) {
    if (static_cast<double>(b[i].successes) < threshold) {
      if (!in) {
        in = true;
        start = i;
      }
      last_down = i;
      up_run = 0;
    } else if (in && ++up_run == hold) {
      periods.push_back(static_cast<double>(last_down + 1 - start) * bucket_s);
      in = false;
    }
  }
  if (in) periods.push_back(static_cast<double>(last_down + 1 - start) * bucket_s);
  return periods;
}

double felt_outage(const std::vector<double>& periods) {
  double sum = 0, squares = 0;
  for (const double x : periods) {
    sum += x;
    squares += x * x;
  }
  return sum > 0 ? squares / (2 * sum) : 0.0;
}

namespace {

// A boundary point belongs to the map whose model, mapped scenario and strategy it names.
bool of_map(const boundary_point& p, const map_axes& m) {
  return m.model == p.model && m.mapped == p.mapped && m.strategy == p.strategy;
}

const map_axes* axes_of(const scenario_result& r, const boundary_point& p) {
  for (const auto& m : r.maps) {
    if (of_map(p, m)) return &m;
  }
  return nullptr;
}

}  // namespace

void write_boundary_csv(const scenario_result& r, std::ostream& out) {
  out << "model,load,trigger,trigger_lo,trigger_hi,replications,strategy,probes,always_down,"
         "never_down,load_key,trigger_key,mapped\n";
  std::string row;
  for (const auto& p : r.boundary) {
    const map_axes* axes = axes_of(r, p);
    row.clear();
    csv_append(row, p.model);
    fmt::format_to(std::back_inserter(row), ",{},{},{},{},{},", p.load, p.trigger, p.trigger_lo,
                   p.trigger_hi, p.replications);
    csv_append(row, p.strategy);
    fmt::format_to(std::back_inserter(row), ",{},{},{},", p.probes, p.always_down ? 1 : 0,
                   p.never_down ? 1 : 0);
    csv_append(row, axes ? axes->load_key : std::string());
    row += ',';
    csv_append(row, axes ? axes->trigger_key : std::string());
    row += ',';
    csv_append(row, p.mapped);
    row += '\n';
    out << row;
  }
}

nlohmann::ordered_json map_json(const scenario_result& r) {
  nlohmann::ordered_json maps = nlohmann::ordered_json::array();
  for (const auto& m : r.maps) {
    nlohmann::ordered_json j = m;
    auto& points = j["boundary"] = nlohmann::ordered_json::array();
    for (const auto& p : r.boundary) {
      if (of_map(p, m)) points.push_back(p);
    }
    maps.push_back(std::move(j));
  }
  return {{"maps", std::move(maps)}};
}

std::string trigger_text(const boundary_point& b, const std::string& unit) {
  const std::string u = unit.empty() ? "" : " " + unit;
  if (b.always_down) return "down after any trigger (" + format_latency(b.trigger) + u + ")";
  if (b.never_down) return "none up to " + format_latency(b.trigger) + u;
  return format_latency(b.trigger) + u;
}

std::vector<map_comparison> map_comparisons(const scenario_result& r) {
  std::vector<map_comparison> out;
  for (const std::vector<map_axes>& group : plotting::phase_groups(r)) {
    if (group.size() < 2) continue;
    std::vector<std::vector<const boundary_point*>> points;
    for (const map_axes& m : group) points.push_back(plotting::points_of(r, m));
    // The loads every strategy of the group was mapped at, in the first one's order.
    std::vector<std::size_t> later(group.size(), 0);
    map_comparison c;
    c.mapped = group.front().mapped;
    double widest = -1;
    for (const boundary_point* first : points.front()) {
      std::vector<const boundary_point*> at;
      for (const auto& of_strategy : points) {
        const auto it =
            std::find_if(of_strategy.begin(), of_strategy.end(),
                         [&](const boundary_point* b) { return b->load == first->load; });
        if (it != of_strategy.end()) at.push_back(*it);
      }
      if (at.size() != group.size()) continue;
      ++c.loads;
      const auto [lo, hi] =
          std::minmax_element(at.begin(), at.end(),
                              [](const auto* a, const auto* b) { return a->trigger < b->trigger; });
      if ((*hi)->trigger == (*lo)->trigger) continue;
      for (std::size_t i = 0; i < at.size(); ++i)
        later[i] += at[i]->trigger == (*hi)->trigger ? 1 : 0;
      if ((*hi)->trigger - (*lo)->trigger > widest) {
        widest = (*hi)->trigger - (*lo)->trigger;
        const map_axes& m = group.front();
        c.example = fmt::format("at {} = {}{}:", m.load_key, format_latency(first->load),
                                m.load_unit.empty() ? "" : " " + m.load_unit);
        for (std::size_t i = 0; i < at.size(); ++i) {
          c.example += fmt::format("{} {} {}", i == 0 ? "" : ",", group[i].strategy,
                                   trigger_text(*at[i], m.trigger_unit));
        }
      }
    }
    const auto best = static_cast<std::size_t>(
        std::distance(later.begin(), std::max_element(later.begin(), later.end())));
    c.later = later[best];
    c.strategy = group[best].strategy;
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (i != best) c.others.push_back(group[i].strategy);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string map_comparison::sentence() const {
  std::string names;
  for (std::size_t i = 0; i < others.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == others.size() ? " and " : ", ") + others[i];
  }
  if (later == 0) {
    return fmt::format("{}: {} and {} tip at the same trigger at all {} loads", mapped, strategy,
                       names, loads);
  }
  return fmt::format("{}: {} survives a longer trigger than {} at {} of {} loads", mapped, strategy,
                     names, later, loads);
}

std::string map_table(const scenario_result& r) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"model", "strategy", "load", "trigger", "trigger_lo", "trigger_hi", "reps",
                  "probes", "verdict"});
  const auto num = [](double v) { return fmt::format("{:.4g}", v); };
  for (const auto& p : r.boundary) {
    // text_table escapes every cell.
    rows.push_back({p.model, p.strategy, num(p.load), num(p.trigger), num(p.trigger_lo),
                    num(p.trigger_hi), std::to_string(p.replications), std::to_string(p.probes),
                    p.always_down  ? "down at the range's low end"
                    : p.never_down ? "recovers at the range's high end"
                                   : "boundary"});
  }
  std::string out =
      fmt::format("{} (metastable map, seed {})\n", escape_controls(r.scenario), r.seed);
  for (const auto& m : r.maps) {
    out += fmt::format("  {} / {}: load = {}{}, trigger = {}{}\n", escape_controls(m.model),
                       escape_controls(m.strategy), escape_controls(m.load_key),
                       m.load_unit.empty() ? "" : " (" + escape_controls(m.load_unit) + ")",
                       escape_controls(m.trigger_key),
                       m.trigger_unit.empty() ? "" : " (" + escape_controls(m.trigger_unit) + ")");
  }
  out += text_table{std::move(rows), 2}.render();
  for (const map_comparison& c : map_comparisons(r)) {
    out += escape_controls(c.sentence()) +
           (c.example.empty() ? "" : "\n  " + escape_controls(c.example)) + "\n";
  }
  if (r.stopped)
    out += "partial: " + describe(*r.stopped) + "; the maps stop at the last load done\n";
  return out;
}

}  // namespace backoff::report
