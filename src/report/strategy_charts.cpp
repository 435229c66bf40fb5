// SPDX-License-Identifier: Apache-2.0
// A plain run's charts per strategy (chart_choice.hpp): latency percentiles and totals as bars,
// the per-operation charts read from clients.csv, and the model's own fields as bars.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/error.hpp"
#include "chart_choice.hpp"
#include "clients_csv.hpp"
#include "csv.hpp"

namespace backoff::report::plotting {
namespace fs = std::filesystem;

// Latency percentiles and totals per strategy.
void summary_charts(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  const std::string& unit = run.unit;
  {
    // Latency on a log scale (issue 23): the median and the tail differ by orders of magnitude
    // in most of these models. p50, p95, p99 and max: four bars per strategy, not six.
    chart c = make_chart("latency", "Latency percentiles per strategy (log scale)");
    extent e;
    for (const auto& s : r.strategies) {
      // A strategy where nothing completed has no latency: NaN, which gnuplot leaves out.
      const double nan = std::nan("");
      const latency_summary l =
          s.latency_s.value_or(latency_summary{nan, nan, nan, nan, nan, nan, nan, nan});
      c.data += fmt::format("{} {} {} {} {}\n", dq(s.name), num(l.p50), num(l.p95), num(l.p99),
                            num(l.max));
      for (double v : {l.p50, l.p95, l.p99, l.max}) e.add(0, v);
    }
    const std::string y = e.has_positive() ? fmt::format("set logscale y\nset yrange [{}:{}]\n",
                                                         num(e.y_pos_lo / 2), num(e.y_hi * 2))
                                           : std::string("set yrange [0:*]\n");
    c.body = title_cmd(r.scenario + ": latency percentiles per strategy (log scale)", "strategy",
                       "latency (" + unit + "), log scale") +
             y + clustered_bars_cmd +
             "plot DATA using 2:xtic(1) title 'p50', '' using 3 title 'p95', "
             "'' using 4 title 'p99', '' using 5 title 'max'\n";
    if (e.has_positive()) out.push_back(std::move(c));
  }
  {
    chart c = make_chart("requests",
                         "Total requests (attempts) and completed operations "
                         "per strategy");
    std::vector<double> values;
    for (const auto& s : r.strategies) {
      c.data += fmt::format("{} {} {}\n", dq(s.name), s.attempts, s.completed);
      values.push_back(static_cast<double>(s.attempts));
      values.push_back(static_cast<double>(s.completed));
    }
    c.body = title_cmd(r.scenario + ": total requests per strategy", "strategy", "count") +
             (spans(values, 100) ? "set logscale y\n" : "set yrange [0:*]\n") + clustered_bars_cmd +
             "plot DATA using 2:xtic(1) title 'attempts (requests sent)', "
             "'' using 3 title 'operations completed'\n";
    if (any_positive(values)) out.push_back(std::move(c));
  }
}

namespace {

struct client_row {
  double latency;
  double attempts;
  bool completed;
};

// clients.csv grouped by strategy. Each column is found by its name in the file's header
// (clients_csv.hpp), so a file whose columns moved still reads; one without a column the charts
// use is a plot_error naming the file and the column.
std::map<std::string, std::vector<client_row>> read_clients(const fs::path& file) {
  std::map<std::string, std::vector<client_row>> out;
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> field;
  if (!csv_read_record(in, field)) return out;  // an empty file: no operations
  const auto position = [&](clients_column column) {
    const std::string_view name = clients_csv_name(column);
    const auto it = std::find(field.begin(), field.end(), name);
    if (it == field.end()) {
      throw plot_error(
          escape_controls(file.string()) + ": no column \"" + std::string(name) +
          "\" in its header (expected " +
          std::string(clients_csv_header_line.substr(0, clients_csv_header_line.size() - 1)) + ")");
    }
    return static_cast<std::size_t>(it - field.begin());
  };
  const std::size_t strategy = position(clients_column::strategy);
  const std::size_t attempts = position(clients_column::attempts);
  const std::size_t latency = position(clients_column::latency_s);
  const std::size_t status = position(clients_column::status);
  const std::size_t columns = field.size();
  while (csv_read_record(in, field)) {
    if (field.size() != columns) continue;
    try {
      out[field[strategy]].push_back(
          {std::stod(field[latency]), std::stod(field[attempts]), field[status] == "completed"});
    } catch (const std::exception&) {
      continue;  // a damaged row is left out of a chart rather than failing the run
    }
  }
  return out;
}

// The ranks a per-operation chart keeps of n sorted values: about `body` evenly spaced ones
// below the 90th percentile and as many again in the tail above it, plus the last (the max), so
// the curve keeps its shape and its tail while the SVG stays small (issue 23: under 1 MB a page).
std::vector<std::size_t> thinned_ranks(std::size_t n, std::size_t body) {
  std::vector<std::size_t> out;
  if (n == 0) return out;
  const std::size_t tail_from = n * 9 / 10;
  const std::size_t body_step = std::max<std::size_t>(1, tail_from / body);
  const std::size_t tail_step = std::max<std::size_t>(1, (n - tail_from) / body);
  for (std::size_t i = 0; i < tail_from; i += body_step) out.push_back(i);
  for (std::size_t i = tail_from; i < n; i += tail_step) out.push_back(i);
  if (out.back() != n - 1) out.push_back(n - 1);
  return out;
}

// The latency distribution of the completed operations, per strategy: the fraction done within
// each latency (hedged against not, in hedging-tail), latency on a log scale.
void latency_cdf_chart(const plain_run& run, std::map<std::string, std::vector<client_row>>& rows,
                       std::vector<chart>& out) {
  chart c = make_chart("latency-cdf",
                       "Latency distribution: the fraction of completed operations done within a "
                       "latency");
  std::vector<std::string> titles;
  series_axes axes;
  for (const auto& s : run.r.strategies) {
    auto it = rows.find(s.name);
    if (it == rows.end()) continue;
    std::vector<double> done;
    for (const client_row& row : it->second) {
      if (row.completed) done.push_back(row.latency);
    }
    if (done.empty()) continue;
    std::sort(done.begin(), done.end());
    const std::size_t n = done.size();
    for (std::size_t i : thinned_ranks(n, 120)) {
      const double fraction = static_cast<double>(i + 1) / static_cast<double>(n);
      c.data += fmt::format("{} {}\n", num(done[i]), num(fraction));
      axes.data.add(done[i], fraction);
    }
    c.data += "\n\n";
    titles.push_back(s.name);
  }
  if (titles.empty() || !(axes.data.x_hi > 0)) return;
  // A log x needs positive latencies: a tick model's zero-tick operations would vanish from it.
  const bool log_x = axes.data.x_lo > 0;
  c.body = labels_cmd("latency (" + run.unit + ")" + (log_x ? ", log scale" : ""),
                      "fraction done within") +
           (log_x ? "set logscale x\n" : "") + "set key bottom right\n";
  axes.data.y_hi = 1.0 / 1.05;  // y from 0 to 1
  if (log_x) axes.x = {axes.data.x_lo / 1.5, axes.data.x_hi * 1.5};
  axes.log_x = log_x;
  plot_series(c, run.r.scenario + ": latency distribution (completed operations)", titles,
              "using 1:2 with steps lw 2", axes);
  out.push_back(std::move(c));
}

}  // namespace

// Per operation (per client in seed 001's model), sorted by latency. Large runs are thinned
// (thinned_ranks): the curve keeps its shape and the SVG stays small.
void client_charts(const plain_run& run, const fs::path& clients_csv, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  const std::string& unit = run.unit;
  if (fs::exists(clients_csv)) {
    auto rows = read_clients(clients_csv);
    chart lat = make_chart("clients-latency",
                           "Latency of each operation, operations sorted by latency (log scale)");
    chart att =
        make_chart("clients-attempts", "Attempts of each operation, operations sorted by latency");
    std::vector<std::string> titles;
    series_axes lat_axes, att_axes;
    for (const auto& s : r.strategies) {
      auto it = rows.find(s.name);
      if (it == rows.end() || it->second.empty()) continue;
      auto& v = it->second;
      std::stable_sort(v.begin(), v.end(), [](const client_row& a, const client_row& b) {
        return a.latency < b.latency;
      });
      for (std::size_t i : thinned_ranks(v.size(), 50)) {
        const double rank = static_cast<double>(i + 1);
        lat.data += fmt::format("{} {}\n", i + 1, num(v[i].latency));
        att.data += fmt::format("{} {}\n", i + 1, num(v[i].attempts));
        lat_axes.data.add(rank, v[i].latency);
        att_axes.data.add(rank, v[i].attempts);
      }
      lat.data += "\n\n";
      att.data += "\n\n";
      titles.push_back(s.name);
    }
    if (!titles.empty()) {
      const std::string x = "operation, sorted by latency (rank)";
      lat_axes.log_y = true;
      lat_axes.data.x_lo = std::min(lat_axes.data.x_lo, 0.0);
      att_axes.data.x_lo = std::min(att_axes.data.x_lo, 0.0);
      lat.body = labels_cmd(x, "latency (" + unit + "), log scale");
      plot_series(lat, r.scenario + ": latency per operation, sorted", titles,
                  "using 1:2 with lines lw 2", lat_axes);
      att.body = labels_cmd(x, "attempts");
      plot_series(att, r.scenario + ": attempts per operation, sorted by latency", titles,
                  "using 1:2 with points pt 7 ps 0.35", att_axes);
      lat.embed = false;  // the latency distribution below draws the same data
      // Points are the heaviest SVG there is: as small multiples, this one stays on disk (the
      // ranking table has each strategy's attempts per operation).
      att.embed = titles.size() <= max_overplotted;
      out.push_back(std::move(lat));
      out.push_back(std::move(att));
    }
    latency_cdf_chart(run, rows, out);
  }
}

// The model's own figures (model_field), one bar chart per group: the fields named GROUP.x,
// clustered per strategy (retry-layers' calls per layer, load_amplification's phases), and
// each ungrouped field alone.
void field_charts(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  std::vector<std::string> groups;
  const auto group_of = [](const std::string& name) { return name.substr(0, name.find('.')); };
  for (const auto& s : r.strategies) {
    for (const auto& f : s.fields) {
      const std::string g = group_of(f.name);
      if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    }
  }
  // The system model's services.* mix counts, ratios and seconds: their own charts and table
  // show them (service_charts.cpp, services_html).
  std::erase(groups, std::string("services"));
  for (const std::string& g : groups) {
    std::vector<std::string> members;  // full names, first-seen order
    for (const auto& s : r.strategies) {
      for (const auto& f : s.fields) {
        if (group_of(f.name) == g &&
            std::find(members.begin(), members.end(), f.name) == members.end()) {
          members.push_back(f.name);
        }
      }
    }
    chart c = make_chart("field-" + slug(g), g + " per strategy");
    std::vector<double> values;
    for (const auto& s : r.strategies) {
      std::string row = dq(s.name);
      for (const std::string& m : members) {
        double v = std::nan("");
        for (const auto& f : s.fields) {
          if (f.name == m && f.value) v = *f.value;
        }
        if (!std::isnan(v)) values.push_back(v);
        row += ' ' + num(v);
      }
      c.data += row + '\n';
    }
    if (!any_positive(values)) continue;
    std::string plot = "plot ";
    for (std::size_t i = 0; i < members.size(); ++i) {
      const std::string title = members[i].size() > g.size() ? members[i].substr(g.size() + 1) : g;
      plot += fmt::format("{}{} using {}{} title {}", i == 0 ? "" : ", ", i == 0 ? "DATA" : "''",
                          i + 2, i == 0 ? ":xtic(1)" : "", gq(title));
    }
    c.body = title_cmd(r.scenario + ": " + g + " per strategy", "strategy", g) +
             (spans(values, 100) && *std::min_element(values.begin(), values.end()) > 0
                  ? "set logscale y\n"
                  : "set yrange [0:*]\n") +
             clustered_bars_cmd + plot + "\n";
    out.push_back(std::move(c));
  }
}

}  // namespace backoff::report::plotting
