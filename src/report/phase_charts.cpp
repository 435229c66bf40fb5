// SPDX-License-Identifier: Apache-2.0
// A metastable map's charts (chart_choice.hpp): for each map, the trigger that tips the system
// into staying down, against the base load.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "chart_choice.hpp"

namespace backoff::report::plotting {

std::vector<const boundary_point*> points_of(const scenario_result& r, const map_axes& m) {
  std::vector<const boundary_point*> out;
  for (const auto& b : r.boundary) {
    if (b.model == m.model && b.mapped == m.mapped && b.strategy == m.strategy) out.push_back(&b);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto* a, const auto* b) { return a->load < b->load; });
  return out;
}

std::vector<map_axes> maps_of(const scenario_result& r) {
  std::vector<map_axes> maps = r.maps;
  for (const auto& b : r.boundary) {
    const bool known = std::any_of(maps.begin(), maps.end(), [&](const map_axes& m) {
      return m.model == b.model && m.mapped == b.mapped && m.strategy == b.strategy;
    });
    if (!known) maps.push_back({b.model, b.mapped, b.strategy, "load", "", "trigger", ""});
  }
  return maps;
}

std::string axis_label(const std::string& key, const std::string& unit) {
  return unit.empty() ? key : key + " (" + unit + ")";
}

// The maps drawn on one phase chart: those of one mapped scenario over the same axes, one
// strategy each.
std::vector<std::vector<map_axes>> phase_groups(const scenario_result& r) {
  std::vector<std::vector<map_axes>> groups;
  for (const map_axes& m : maps_of(r)) {
    if (points_of(r, m).empty()) continue;
    const auto same_axes = [&](const std::vector<map_axes>& g) {
      const map_axes& f = g.front();
      return f.model == m.model && f.mapped == m.mapped && f.load_key == m.load_key &&
             f.load_unit == m.load_unit && f.trigger_key == m.trigger_key &&
             f.trigger_unit == m.trigger_unit;
    };
    const auto it = std::find_if(groups.begin(), groups.end(), same_axes);
    if (it == groups.end()) {
      groups.push_back({m});
    } else {
      it->push_back(m);
    }
  }
  return groups;
}

namespace {

// One strategy's boundary on a phase chart: its data blocks and plot clauses, and the extent of
// its points.
struct phase_series {
  std::vector<std::pair<std::string, std::string>> blocks;  // data, plot clause
  double y_hi = 0, x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
};

// `label` prefixes the legend entries ("" for a chart of one strategy); `colour` and `dash` set
// the strategy apart from the others on the chart.
phase_series strategy_series(const std::vector<const boundary_point*>& points,
                             const std::string& label, const std::string& colour, int dash) {
  phase_series s;
  std::string boundary, bracketed, always, never;
  for (const boundary_point* b : points) {
    boundary += num(b->load) + ' ' + num(b->trigger) + '\n';
    const std::string row = fmt::format("{} {} {} {}\n", num(b->load), num(b->trigger),
                                        num(b->trigger_lo), num(b->trigger_hi));
    if (b->always_down) {
      always += row;
    } else if (b->never_down) {
      never += row;
    } else {
      bracketed += row;
    }
    s.y_hi = std::max({s.y_hi, b->trigger, b->trigger_hi});
    s.x_lo = std::min(s.x_lo, b->load);
    s.x_hi = std::max(s.x_hi, b->load);
  }
  const std::string line_colour = label.empty() ? "#444444" : colour;
  s.blocks.push_back(
      {boundary, fmt::format("using 1:2 with lines lw 2 dt {} lc rgb '{}' title '{}'", dash,
                             line_colour, label + "boundary")});
  if (!bracketed.empty()) {
    s.blocks.push_back({bracketed, fmt::format("using 1:2:3:4 with yerrorbars pt 7 ps 0.8 lc rgb "
                                               "'{}' title '{}'",
                                               colour, label + "boundary point (bracket)")});
  }
  if (!always.empty()) {
    s.blocks.push_back(
        {always, fmt::format("using 1:2 with points pt 11 ps 1.6 lc rgb '{}' title '{}'",
                             label.empty() ? "#D55E00" : colour,
                             label + "always down (the smallest trigger tips it)")});
  }
  if (!never.empty()) {
    s.blocks.push_back(
        {never, fmt::format("using 1:2 with points pt 9 ps 1.6 lc rgb '{}' title '{}'",
                            label.empty() ? "#009E73" : colour,
                            label + "never down (the largest trigger recovers)")});
  }
  return s;
}

}  // namespace

// A mapped scenario's phase chart: trigger against base load; for each strategy mapped on it,
// its boundary, each boundary point at its midpoint with the bisection's bracket as an error bar.
// Below a boundary the system recovers, above it stays down; with one strategy the two regions
// are shaded (green, red). A load where even the smallest trigger stays down, or the largest
// still recovers, is a marked point at the end of the range, not a bracket.
void phase_charts(const scenario_result& r, std::vector<chart>& out) {
  static constexpr std::array<const char*, 6> colours{"#0072B2", "#D55E00", "#009E73",
                                                      "#CC79A7", "#E69F00", "#56B4E9"};
  std::vector<std::string> used;
  for (const std::vector<map_axes>& group : phase_groups(r)) {
    const map_axes& m = group.front();
    const bool one = group.size() == 1;
    std::string name = "phase-" + slug(one ? m.mapped + "-" + m.strategy : m.mapped);
    while (std::find(used.begin(), used.end(), name) != used.end()) name += "-2";
    used.push_back(name);
    std::string strategies;
    for (const map_axes& g : group) strategies += (strategies.empty() ? "" : ", ") + g.strategy;
    chart c = make_chart(name, "Where it tips: " + m.mapped + ", " + strategies +
                                   ": the trigger above which the system stays down, by base "
                                   "load (bars: the bisection's bracket)");
    std::vector<std::pair<std::string, std::string>> blocks;  // data, plot clause
    double y_hi = 0, x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
    for (std::size_t i = 0; i < group.size(); ++i) {
      const auto points = points_of(r, group[i]);
      phase_series s =
          strategy_series(points, one ? "" : group[i].strategy + ": ", colours[i % colours.size()],
                          one ? 1 : static_cast<int>(i) + 1);
      if (one) {
        blocks.push_back({s.blocks.front().first,
                          "using 1:2 with filledcurves x1 fc rgb '#dff0d8' fs solid 1.0 noborder "
                          "title 'recovers'"});
        blocks.push_back({s.blocks.front().first,
                          "using 1:2 with filledcurves x2 fc rgb '#f2dede' fs solid 1.0 noborder "
                          "title 'stays down'"});
      }
      blocks.insert(blocks.end(), s.blocks.begin(), s.blocks.end());
      y_hi = std::max(y_hi, s.y_hi);
      x_lo = std::min(x_lo, s.x_lo);
      x_hi = std::max(x_hi, s.x_hi);
    }
    const double pad = x_hi > x_lo ? (x_hi - x_lo) * 0.05 : std::max(std::fabs(x_lo) * 0.1, 1.0);
    const double top = y_hi > 0 ? y_hi * 1.25 : 1;
    std::string plot = "plot ";
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      c.data += blocks[i].first + "\n\n";
      plot += fmt::format("{}{} index {} {}", i == 0 ? "" : ", \\\n  ", i == 0 ? "DATA" : "''", i,
                          blocks[i].second);
    }
    c.body =
        title_cmd(r.scenario + ": where " + m.mapped + " tips (" + strategies + ")",
                  axis_label(m.load_key, m.load_unit), axis_label(m.trigger_key, m.trigger_unit)) +
        fmt::format("set xrange [{}:{}]\nset yrange [0:{}]\n", num(x_lo - pad), num(x_hi + pad),
                    num(top)) +
        "set label 1 'stays down' at graph 0.03, graph 0.93 front font ',12' "
        "tc rgb '#a94442'\n"
        "set label 2 'recovers' at graph 0.03, graph 0.06 front font ',12' "
        "tc rgb '#3c763d'\n" +
        // Several strategies' legends would squeeze the plot from the side: they go below it.
        std::string(one ? "set key outside right top box\n" : "set key below box\n") + plot + "\n";
    out.push_back(std::move(c));
  }
}

}  // namespace backoff::report::plotting
