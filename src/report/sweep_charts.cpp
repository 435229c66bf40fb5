// SPDX-License-Identifier: Apache-2.0
// A sweep's charts (chart_choice.hpp): each metric against the first swept key, one line per
// strategy and values of the other keys, with 95 % confidence bands over replications.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backoff/duration.hpp"
#include "chart_choice.hpp"

namespace backoff::report::plotting {
namespace {

struct metric {
  std::string field, label, title;
  std::function<double(const strategy_summary&)> get;
  bool percent;  // a share: 0 to 100, no t-interval (it would cross 100)
};

// The x of a point: the first key's value as a number (durations in seconds), or nothing when it
// is not numeric (the chart then uses categories).
std::optional<double> numeric(const sweep_value& v) {
  using kind = sweep_value::kind;
  try {
    if (v.type == kind::integer || v.type == kind::number) return std::stod(v.text);
    if (v.type == kind::string) return to_seconds(parse_duration(v.text));
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// A sweep's x axis (its first key) and the lines drawn against it: one per strategy and values
// of the other keys, in first-seen order, each with its cells by x.
struct sweep_lines {
  std::string key;
  bool numeric_x = true;                // false: x is the category's index
  std::vector<std::string> categories;  // when not numeric
  std::string x_label;
  std::vector<std::string> names;
  std::vector<std::string> strategy, others;  // per line: its strategy, the other keys' values
  std::vector<std::vector<std::pair<double, const sweep_cell*>>> cells;
};

sweep_lines sweep_lines_of(const scenario_result& r) {
  sweep_lines l;
  l.key = r.points.front().params.front().first;
  bool durations = false;
  for (const auto& p : r.points) {
    const auto& v = p.params.front().second;
    l.numeric_x = l.numeric_x && numeric(v).has_value();
    durations = durations || v.type == sweep_value::kind::string;
  }
  l.x_label = l.key + (l.numeric_x && durations ? " (s)" : "");
  const auto x_of = [&](const point_result& p) {
    const auto& v = p.params.front().second;
    if (l.numeric_x) return *numeric(v);
    auto it = std::find(l.categories.begin(), l.categories.end(), v.text);
    if (it == l.categories.end()) {
      l.categories.push_back(v.text);
      return static_cast<double>(l.categories.size() - 1);
    }
    return static_cast<double>(it - l.categories.begin());
  };
  for (const auto& p : r.points) {
    std::string others;
    for (std::size_t k = 1; k < p.params.size(); ++k) {
      others += fmt::format(" {}={}", p.params[k].first, p.params[k].second.text);
    }
    const double x = x_of(p);
    for (const auto& cell : p.strategies) {
      const std::string line = cell.name + others;
      auto it = std::find(l.names.begin(), l.names.end(), line);
      if (it == l.names.end()) {
        l.names.push_back(line);
        l.strategy.push_back(cell.name);
        l.others.push_back(others.empty() ? others : others.substr(1));
        l.cells.emplace_back();
        it = l.names.end() - 1;
      }
      l.cells[static_cast<std::size_t>(it - l.names.begin())].emplace_back(x, &cell);
    }
  }
  // Lines run left to right whatever the order of the points (a source's list out of order, as
  // retry-failure-rate's 0.75 between 0.05 and 0.1).
  if (l.numeric_x) {
    for (auto& cells : l.cells) {
      std::stable_sort(cells.begin(), cells.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }
  return l;
}

// The figures drawn against a sweep's key; `unit` is "s" or "ticks".
std::vector<metric> sweep_metrics(const scenario_result& r, const std::string& unit) {
  std::vector<metric> metrics{
      {"completed", "operations completed", "throughput (operations completed)",
       [](const strategy_summary& s) { return static_cast<double>(s.completed); }, false},
      {"attempts", "attempts (requests sent)", "work (attempts)",
       [](const strategy_summary& s) { return static_cast<double>(s.attempts); }, false},
      {"attempts_per_operation", "load (attempts per operation)", "load (attempts per operation)",
       [](const strategy_summary& s) { return s.attempts_per_operation; }, false},
      {"success_rate", "success rate (% of operations completed)", "success rate",
       [](const strategy_summary& s) { return 100.0 * s.success_rate(); }, true},
      {"makespan_s", "completion time (" + unit + ")", "completion time (makespan)",
       [](const strategy_summary& s) { return s.makespan_s; }, false},
      {"latency_s_p95", "p95 latency (" + unit + ")", "p95 latency",
       [](const strategy_summary& s) { return s.latency_s ? s.latency_s->p95 : std::nan(""); },
       false},
      {"latency_s_p99", "p99 latency (" + unit + ")", "p99 latency",
       [](const strategy_summary& s) { return s.latency_s ? s.latency_s->p99 : std::nan(""); },
       false},
      {"goodput_per_s",
       std::string("goodput (operations per ") + (unit == "s" ? "s" : "tick") + ")", "goodput",
       [](const strategy_summary& s) { return s.goodput_per_s; }, false},
  };
  // The model's own fields (model_field), each against the swept key.
  std::vector<std::string> fields;
  for (const auto& p : r.points) {
    for (const auto& cell : p.strategies) {
      for (const auto& run : cell.runs) {
        for (const auto& f : run.fields) {
          if (std::find(fields.begin(), fields.end(), f.name) == fields.end()) {
            fields.push_back(f.name);
          }
        }
      }
    }
  }
  for (const std::string& name : fields) {
    metrics.push_back({name, name, name,
                       [name](const strategy_summary& s) {
                         for (const auto& f : s.fields) {
                           if (f.name == name && f.value) return *f.value;
                         }
                         return std::nan("");
                       },
                       false});
  }
  if (r.outage) {
    metrics.push_back(
        {"recovery_s", "recovery time after the outage (" + unit + ")",
         "recovery time (recovered runs only)",
         [](const strategy_summary& s) { return s.recovery_s ? *s.recovery_s : std::nan(""); },
         false});
    metrics.push_back({"recovered_runs", "runs recovered (%)", "runs that recovered",
                       [](const strategy_summary& s) { return s.recovery_s ? 100.0 : 0.0; }, true});
  }
  return metrics;
}

// A line of a metric chart: its data block in the chart and its index in sweep_lines.
struct metric_line {
  std::size_t block;
  std::size_t index;
};

// A line to draw and its colour (gnuplot's `lt`).
using coloured_line = std::pair<const metric_line*, std::size_t>;

// What a metric chart's plot clauses share: the lines, whether there are replications (and so
// a confidence band), and the band's edges as gnuplot expressions.
struct metric_bands {
  const sweep_lines& l;
  bool ci;
  std::string lo, hi;
};

// Each line's mean over the replications at each x with its 95 % half-width, one data block per
// line that has a value, into c.data and `axes`; returns the lines drawn.
std::vector<metric_line> metric_data(const sweep_lines& l, const metric& m, bool ci, chart& c,
                                     series_axes& axes) {
  std::vector<metric_line> drawn;
  for (std::size_t i = 0; i < l.names.size(); ++i) {
    std::string block;
    for (const auto& [x, cell] : l.cells[i]) {
      std::vector<double> v;
      for (const auto& run : cell->runs) {
        const double value = m.get(run);
        if (!std::isnan(value)) v.push_back(value);
      }
      if (v.empty()) continue;
      const mean_ci mc = mean_and_ci95(v);
      block += fmt::format("{} {} {}\n", num(x), num(mc.mean), num(mc.ci95));
      axes.data.add(x, mc.mean);
      if (ci) axes.data.add(x, mc.mean + mc.ci95);
    }
    if (block.empty()) continue;
    c.data += block + "\n\n";
    drawn.push_back({drawn.size(), i});
  }
  return drawn;
}

// The x axis: categories as named tics (and a range around them), or numbers with a margin.
std::string metric_x_axis(const sweep_lines& l, series_axes& axes) {
  if (l.numeric_x) return "set offsets graph 0.02, graph 0.02, 0, 0\n";
  std::string tics = "set xtics (";
  for (std::size_t i = 0; i < l.categories.size(); ++i) {
    tics += fmt::format("{}{} {}", i == 0 ? "" : ", ", gq(l.categories[i]), i);
  }
  axes.x = {-0.5, static_cast<double>(l.categories.size()) - 0.5};
  return tics + ")\n";
}

// One clause per line: its band (no key entry), then its line; `lt` picks the colour. Titled
// with the line's full name, or in a strategy's panel with the other keys' values alone.
std::string metric_clauses(const metric_bands& b, const std::vector<coloured_line>& lines,
                           bool with_titles) {
  std::string cmd = "plot ";
  bool first = true;
  for (const auto& [ln, colour] : lines) {
    const std::string source =
        (first ? std::string("DATA") : std::string("''")) + fmt::format(" index {}", ln->block);
    if (b.ci) {
      cmd += fmt::format(
          "{}{} using 1:{}:{} with filledcurves fs transparent solid 0.18 noborder lt {} notitle",
          first ? "" : ", \\\n  ", source, b.lo, b.hi, colour);
      first = false;
    }
    const std::string& name = with_titles ? b.l.names[ln->index] : b.l.others[ln->index];
    cmd += fmt::format("{}{} index {} using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 lt {} {}",
                       first ? "" : ", \\\n  ", first ? "DATA" : "''", ln->block, colour,
                       name.empty() ? std::string("notitle") : "title " + gq(name));
    first = false;
  }
  return cmd + "\n";
}

// More lines than fit one chart: one panel per strategy on shared axes, each with one line per
// value of the other keys, a value in the same colour in every panel.
std::string metric_panels(chart& c, const metric_bands& b, const std::vector<metric_line>& drawn,
                          const series_axes& axes, const std::string& title) {
  const sweep_lines& l = b.l;
  std::vector<std::string> panels, other_values;
  for (const auto& d : drawn) {
    if (std::find(panels.begin(), panels.end(), l.strategy[d.index]) == panels.end()) {
      panels.push_back(l.strategy[d.index]);
    }
    if (std::find(other_values.begin(), other_values.end(), l.others[d.index]) ==
        other_values.end()) {
      other_values.push_back(l.others[d.index]);
    }
  }
  const auto [rows, columns] = panel_grid(panels.size());
  c.height = panels_height(rows, columns);
  std::string body = panel_tics(axes, l.numeric_x);
  body += fmt::format("set key inside top left font ',8'\nset multiplot layout {},{} title {}\n",
                      rows, columns, gq(title + " (one panel per strategy, shared axes)"));
  for (const std::string& panel : panels) {
    std::vector<coloured_line> lines;
    for (const auto& d : drawn) {
      if (l.strategy[d.index] != panel) continue;
      const auto colour = static_cast<std::size_t>(
          std::find(other_values.begin(), other_values.end(), l.others[d.index]) -
          other_values.begin());
      lines.push_back({&d, colour + 1});
    }
    body += "set title " + gq(panel) + "\n" + metric_clauses(b, lines, false);
  }
  return body + "unset multiplot\n";
}

// One metric against the sweep's key: each line's mean over the replications at each x, with
// its 95 % confidence interval drawn as a band (filledcurves from mean - ci to mean + ci) when
// there are replications. Up to four lines share one chart; more become one panel per strategy
// (metric_panels). None when nothing positive is to be drawn.
std::optional<chart> sweep_metric_chart(const scenario_result& r, const sweep_lines& l,
                                        const metric& m) {
  const bool ci = r.replications > 1;
  const std::string of = ci ? fmt::format(" (mean of {} runs, 95 % CI band)", r.replications) : "";
  chart c =
      make_chart("sweep-" + slug(m.field), fmt::format("{} against {}{}", m.title, l.key, of));
  series_axes axes;
  const std::vector<metric_line> drawn = metric_data(l, m, ci, c, axes);
  if (drawn.empty() || !axes.data.has_positive()) return std::nullopt;
  std::string body = labels_cmd(l.x_label, m.label);
  axes.log_y = !m.percent && spans({axes.data.y_pos_lo, axes.data.y_hi}, 100);
  if (m.percent) {
    axes.data.y_hi = 105 / 1.05;
  }
  // The band's edges, kept inside what the axis can show: 0..100 for a share, above the axis'
  // bottom on a log scale (a CI reaching below zero would otherwise leave a hole).
  const double floor = axes.log_y ? axes.data.y_pos_lo / 1.5 : (m.percent ? 0.0 : -1e300);
  const metric_bands bands{l, ci, fmt::format("($2-$3<{0}?{0}:$2-$3)", num(floor)),
                           m.percent ? "($2+$3>100?100:$2+$3)" : "($2+$3)"};
  body += metric_x_axis(l, axes);
  body += x_range(axes) + y_range(axes);
  const std::string title = r.scenario + ": " + m.title + " vs " + l.key;
  if (drawn.size() <= max_overplotted) {
    std::vector<coloured_line> all;
    for (const auto& d : drawn) all.push_back({&d, all.size() + 1});
    body += "set title " + gq(title) + "\n" + metric_clauses(bands, all, true);
  } else {
    body += metric_panels(c, bands, drawn, axes, title);
  }
  c.body = std::move(body);
  return c;
}

}  // namespace

void sweep_charts(const scenario_result& r, std::vector<chart>& out) {
  if (r.points.empty() || r.points.front().params.empty()) return;
  double spu = 1e-9;
  for (const auto& cell : r.points.front().strategies) {
    if (!cell.runs.empty()) spu = cell.runs.front().seconds_per_unit;
  }
  const sweep_lines lines = sweep_lines_of(r);
  for (const auto& m : sweep_metrics(r, is_ticks(spu) ? "ticks" : "s")) {
    if (auto c = sweep_metric_chart(r, lines, m)) out.push_back(std::move(*c));
  }
}

}  // namespace backoff::report::plotting
