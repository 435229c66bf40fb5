// SPDX-License-Identifier: Apache-2.0
// The charts of a system run for real beside its simulation (twin_comparison.hpp, `backoff load
// --system --compare --plot`): per strategy, the real and the simulated curve on one panel, for
// goodput, for the attempts sent, and for the requests that reached each service. Strategy and
// service names come from the scenario file: they reach gnuplot only through gq() and file names
// only through slug().
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "chart_choice.hpp"
#include "html_tables.hpp"
#include "twin_comparison.hpp"

namespace backoff::report::plotting {
namespace {

// One strategy in both runs.
struct twin_pair {
  const strategy_summary* real = nullptr;
  const strategy_summary* simulated = nullptr;
};

std::vector<twin_pair> pairs_of(const scenario_result& real, const scenario_result& simulated) {
  std::vector<twin_pair> pairs;
  for (const strategy_summary& r : real.strategies) {
    for (const strategy_summary& s : simulated.strategies) {
      if (s.name == r.name) pairs.push_back({&r, &s});
    }
  }
  return pairs;
}

// A per-second rate of one summary over time: (t, value) rows, ending the data block.
using rate_of = std::function<std::vector<std::pair<double, double>>(const strategy_summary&)>;

// One panel per strategy, each with the real (solid) and the simulated (dashed) line.
void overlay_chart(const std::vector<twin_pair>& pairs, const std::string& name,
                   const std::string& caption, const std::string& title, const std::string& y,
                   const rate_of& rate, std::vector<chart>& out) {
  chart c = make_chart(name, caption);
  series_axes axes;
  for (const twin_pair& p : pairs) {
    for (const strategy_summary* s : {p.real, p.simulated}) {
      for (const auto& [t, v] : rate(*s)) {
        axes.data.add(t, v);
        c.data += num(t) + ' ' + num(v) + '\n';
      }
      c.data += "\n\n";
    }
  }
  if (!axes.data.has_positive()) return;
  const auto [rows, columns] = panel_grid(pairs.size());
  c.height = pairs.size() == 1 ? c.height : panels_height(rows, columns);
  c.body = labels_cmd("time (s)", y) + x_range(axes) + y_range(axes) +
           (pairs.size() == 1 ? std::string() : panel_tics(axes, true)) +
           fmt::format("set multiplot layout {},{} title {}\n", rows, columns,
                       gq(title + ": real (solid) and simulated (dashed)"));
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    c.body += fmt::format(
        "set title {}\n{}plot DATA index {} using 1:2 with steps lw 1.5 lt 1 title 'real', "
        "'' index {} using 1:2 with steps lw 1.5 lt 2 dt 2 title 'simulated'\n",
        gq(pairs[i].real->name), i == 0 ? "set key top right font ',9'\n" : "unset key\n", 2 * i,
        2 * i + 1);
  }
  c.body += "unset multiplot\n";
  out.push_back(std::move(c));
}

// Successes or attempts per second of a strategy's time series.
rate_of series_rate(std::uint64_t series_bucket::*field) {
  return [field](const strategy_summary& s) {
    std::vector<std::pair<double, double>> rows;
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    if (width <= 0) return rows;
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      rows.emplace_back(static_cast<double>(i) * width,
                        static_cast<double>(s.buckets[i].*field) / width);
    }
    return rows;
  };
}

// Attempts per second that reached `service`.
rate_of service_rate(const std::string& service) {
  return [service](const strategy_summary& s) {
    std::vector<std::pair<double, double>> rows;
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    for (const service_series& series : s.services) {
      if (series.service != service || width <= 0) continue;
      for (std::size_t i = 0; i < series.buckets.size(); ++i) {
        rows.emplace_back(static_cast<double>(i) * width,
                          static_cast<double>(series.buckets[i].attempts) / width);
      }
    }
    return rows;
  };
}

}  // namespace

void twin_charts(const scenario_result& real, const scenario_result& simulated,
                 std::vector<chart>& out) {
  const std::vector<twin_pair> pairs = pairs_of(real, simulated);
  if (pairs.empty()) return;
  overlay_chart(pairs, "twin-goodput",
                "Goodput: operations that succeeded per second, real and simulated", "goodput",
                "successes per second", series_rate(&series_bucket::successes), out);
  overlay_chart(pairs, "twin-attempts",
                "Attempts the clients sent per second (first tries and retries), real and "
                "simulated",
                "client attempts", "attempts per second", series_rate(&series_bucket::attempts),
                out);
  std::vector<std::string> services;
  for (const service_series& s : pairs.front().real->services) services.push_back(s.service);
  if (services.size() > max_charted_services) services.resize(max_charted_services);
  std::vector<std::string> used;
  for (const std::string& service : services) {
    std::string name = "twin-service-" + slug(service);
    while (std::find(used.begin(), used.end(), name) != used.end()) name += "-2";
    used.push_back(name);
    overlay_chart(pairs, name,
                  "Requests per second that reached " + service +
                      " (first tries and retries), real and simulated",
                  service + ": requests", "attempts per second", service_rate(service), out);
  }
}

std::string twin_html(const scenario_result& real, const scenario_result& simulated) {
  const std::vector<twin_row> rows = compare_twins(simulated, real);
  std::string h =
      "<h2 id=\"twin\">Real against simulated</h2>\n<p>The same scenario and seed, run for real "
      "on loopback and simulated. The twins are held to 15 % on success rate, load and goodput, "
      "25 % on each service's amplification, and the same verdict on recovery; comparison.csv "
      "has every figure.</p>\n<div class=\"table\"><table class=\"ranking\" id=\"twin-table\">\n"
      "<thead><tr><th>strategy</th><th>service</th><th>metric</th><th class=\"num\">simulated"
      "</th><th class=\"num\">real</th><th class=\"num\">ratio</th><th>within</th></tr></thead>"
      "\n<tbody>\n";
  const auto cell = [](const std::optional<double>& v) {
    return v ? fmt::format("{:.4g}", *v) : std::string("-");
  };
  for (const twin_row& row : rows) {
    if (!row.bound) continue;
    h += "<tr><td>" + html_escape(row.strategy) + "</td><td>" +
         html_escape(row.service.empty() ? "-" : row.service) + "</td><td>" +
         html_escape(row.metric) + "</td><td class=\"num\">" + cell(row.simulated) +
         "</td><td class=\"num\">" + cell(row.real) + "</td><td class=\"num\">" +
         cell(row.ratio()) + "</td><td>" + (row.agrees() ? "yes" : "<strong>no</strong>") +
         "</td></tr>\n";
  }
  return h + "</tbody>\n</table></div>\n";
}

}  // namespace backoff::report::plotting
