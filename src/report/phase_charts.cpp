// SPDX-License-Identifier: Apache-2.0
// A metastable map's charts (chart_choice.hpp): for each map, the trigger that tips the system
// into staying down, against the base load.
#include <fmt/format.h>

#include <algorithm>
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

// A map's phase chart: trigger against base load; each boundary point at its midpoint with the
// bisection's bracket as an error bar; below the boundary the system recovers (shaded green),
// above it stays down (shaded red). A load where even the smallest trigger stays down, or the
// largest still recovers, is a marked point at the end of the range, not a bracket.
void phase_charts(const scenario_result& r, std::vector<chart>& out) {
  std::vector<std::string> used;
  for (const map_axes& m : maps_of(r)) {
    const auto points = points_of(r, m);
    if (points.empty()) continue;
    std::string name = "phase-" + slug(m.mapped + "-" + m.strategy);
    while (std::find(used.begin(), used.end(), name) != used.end()) name += "-2";
    used.push_back(name);
    chart c = make_chart(name, "Where it tips: " + m.mapped + ", " + m.strategy +
                                   ": the trigger above which the system stays down, by base "
                                   "load (bars: the bisection's bracket)");
    std::string boundary, bracketed, always, never;
    double y_hi = 0, x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
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
      y_hi = std::max({y_hi, b->trigger, b->trigger_hi});
      x_lo = std::min(x_lo, b->load);
      x_hi = std::max(x_hi, b->load);
    }
    const double pad = x_hi > x_lo ? (x_hi - x_lo) * 0.05 : std::max(std::fabs(x_lo) * 0.1, 1.0);
    const double top = y_hi > 0 ? y_hi * 1.25 : 1;
    std::vector<std::pair<std::string, std::string>> blocks;  // data, plot clause
    blocks.push_back({boundary,
                      "using 1:2 with filledcurves x1 fc rgb '#dff0d8' fs solid 1.0 noborder "
                      "title 'recovers'"});
    blocks.push_back({boundary,
                      "using 1:2 with filledcurves x2 fc rgb '#f2dede' fs solid 1.0 noborder "
                      "title 'stays down'"});
    blocks.push_back({boundary, "using 1:2 with lines lw 2 lc rgb '#444444' title 'boundary'"});
    if (!bracketed.empty()) {
      blocks.push_back({bracketed,
                        "using 1:2:3:4 with yerrorbars pt 7 ps 0.8 lc rgb '#0072B2' "
                        "title 'boundary point (bracket)'"});
    }
    if (!always.empty()) {
      blocks.push_back({always,
                        "using 1:2 with points pt 11 ps 1.6 lc rgb '#D55E00' "
                        "title 'always down (the smallest trigger tips it)'"});
    }
    if (!never.empty()) {
      blocks.push_back({never,
                        "using 1:2 with points pt 9 ps 1.6 lc rgb '#009E73' "
                        "title 'never down (the largest trigger recovers)'"});
    }
    std::string plot = "plot ";
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      c.data += blocks[i].first + "\n\n";
      plot += fmt::format("{}{} index {} {}", i == 0 ? "" : ", \\\n  ", i == 0 ? "DATA" : "''", i,
                          blocks[i].second);
    }
    c.body =
        title_cmd(r.scenario + ": where " + m.mapped + " tips (" + m.strategy + ")",
                  axis_label(m.load_key, m.load_unit), axis_label(m.trigger_key, m.trigger_unit)) +
        fmt::format("set xrange [{}:{}]\nset yrange [0:{}]\n", num(x_lo - pad), num(x_hi + pad),
                    num(top)) +
        "set label 1 'stays down' at graph 0.03, graph 0.93 front font ',12' "
        "tc rgb '#a94442'\n"
        "set label 2 'recovers' at graph 0.03, graph 0.06 front font ',12' "
        "tc rgb '#3c763d'\n"
        "set key outside right top box\n" +
        plot + "\n";
    out.push_back(std::move(c));
  }
}

}  // namespace backoff::report::plotting
