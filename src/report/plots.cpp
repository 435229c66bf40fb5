// SPDX-License-Identifier: Apache-2.0
#include "plots.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "clients_csv.hpp"
#include "csv.hpp"
#include "ranking.hpp"
#include "summary.hpp"

namespace backoff::report {
namespace {

namespace fs = std::filesystem;

// One chart: its data (gnuplot data blocks) and the commands that draw it. The same commands run
// once per terminal, so the PNG and the SVG show the same thing.
struct chart {
  std::string name;     // file base name
  std::string caption;  // shown under the image in the report
  std::string data;     // written to NAME.dat in the scratch folder
  std::string body;     // gnuplot commands; DATA stands for the data file's quoted path
  int width = 900, height = 500;
  // Shown in report.html; otherwise only on disk (a log twin of an embedded chart, the same data
  // as another, or one of many per-strategy charts a small-multiples chart sums up), so that a
  // page stays under 1 MB.
  bool embed = true;
};

chart make_chart(std::string name, std::string caption) {
  chart c;
  c.name = std::move(name);
  c.caption = std::move(caption);
  return c;
}

// A gnuplot single-quoted string, the only kind names may reach: gnuplot does no backquote
// (shell) or @macro substitution in it and reads backslashes literally (gnuplot 5.4 manual,
// "Quote marks", "Substitution"). A control character would end the command line (a newline
// leaves the string open, which gnuplot accepts, and the rest of the name runs as commands), so
// each is written as visible text (\n, \xNN); with the quote doubled, nothing leaves the string.
std::string gq(std::string_view s) {
  std::string out = "'";
  for (char c : escape_controls(s)) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

// A field of a gnuplot data file: double-quoted so names with spaces stay one column; a quote or
// backslash would end or escape the field, a control character split the row.
std::string dq(std::string_view s) {
  std::string field(s);
  std::replace_if(
      field.begin(), field.end(), [](char c) { return c == '"' || c == '\\'; }, '_');
  return "\"" + escape_controls(field) + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "NaN";
  return fmt::format("{}", v);
}

std::string slug(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_';
    if (keep) {
      out += c;
    } else if (c >= 'A' && c <= 'Z') {
      out += static_cast<char>(c - 'A' + 'a');
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "x" : out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The body with each DATA outside a quoted string replaced by the data file: a strategy named
// "DATA" stays a name (gq strings are single-quoted; '' inside one toggles twice).
std::string with_data_file(std::string_view body, const std::string& file) {
  std::string out;
  bool quoted = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '\'') quoted = !quoted;
    if (!quoted && body.compare(i, 4, "DATA") == 0) {
      out += file;
      i += 3;
      continue;
    }
    out += body[i];
  }
  return out;
}

// Draws every chart as PNG and SVG into `dir`: gnuplot writes them in a scratch folder under
// fixed names (chart-N.png), and each is renamed to its name in `dir` once all are drawn.
void draw(const std::vector<chart>& charts, const fs::path& dir, const plot_options& options) {
  scratch_dir tmp(dir);
  // A colour-blind-safe palette (Okabe-Ito, darker yellow) instead of gnuplot's, whose yellow
  // is hard to see on white. Line types survive `reset`, so they are set once.
  std::string script =
      "set encoding utf8\n"
      "set linetype 1 lc rgb '#0072B2' lw 1\nset linetype 2 lc rgb '#D55E00' lw 1\n"
      "set linetype 3 lc rgb '#009E73' lw 1\nset linetype 4 lc rgb '#CC79A7' lw 1\n"
      "set linetype 5 lc rgb '#56B4E9' lw 1\nset linetype 6 lc rgb '#E69F00' lw 1\n"
      "set linetype 7 lc rgb '#000000' lw 1\nset linetype 8 lc rgb '#B8A000' lw 1\n"
      "set linetype cycle 8\n";
  const auto drawn = [](std::size_t n, std::string_view ext) {
    return fmt::format("chart-{}.{}", n, ext);
  };
  for (std::size_t n = 0; n < charts.size(); ++n) {
    const chart& c = charts[n];
    const std::string data = drawn(n, "dat");
    write_file_atomically(tmp.path() / data, c.data);
    const std::string body = with_data_file(c.body, gq(data));
    const std::pair<const char*, const char*> terminals[] = {
        {"png", "pngcairo noenhanced font 'DejaVu Sans,10'"},
        {"svg", "svg noenhanced fixed font 'DejaVu Sans,11' background '#ffffff'"}};
    for (const auto& [ext, terminal] : terminals) {
      script += fmt::format(
          "reset\nset terminal {} size {},{}\nset output {}\n"
          "set grid lc rgb '#dddddd'\nset border lc rgb '#444444'\n"
          "set key outside right top box lc rgb '#cccccc'\nset datafile missing 'NaN'\n"
          "{}\nunset output\n",
          terminal, c.width, c.height, gq(drawn(n, ext)), body);
    }
  }
  write_file_atomically(tmp.path() / "charts.gp", script);
  run_gnuplot(options, tmp.path(), "charts.gp");
  for (std::size_t n = 0; n < charts.size(); ++n) {
    for (const char* ext : {"png", "svg"}) {
      const fs::path from = tmp.path() / drawn(n, ext);
      const fs::path to = dir / (charts[n].name + "." + ext);
      std::error_code ec;
      if (fs::file_size(from, ec) == 0 || ec) {
        throw plot_error("gnuplot did not write " + to.string());
      }
      refuse_symlink(to);
      if (::rename(from.c_str(), to.c_str()) != 0) throw_write_error(to, errno);
    }
  }
}

// ---- helpers for the charts -----------------------------------------------------------------

bool is_ticks(double seconds_per_unit) {
  return seconds_per_unit == 1.0;
}

// Log scale when the positive values span more than `ratio`; never when there are none.
bool spans(const std::vector<double>& values, double ratio) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (double v : values) {
    if (v > 0 && std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  return hi > 0 && hi / lo > ratio;
}

bool any_positive(const std::vector<double>& values) {
  return std::any_of(values.begin(), values.end(), [](double v) { return v > 0; });
}

std::string title_cmd(std::string_view title, std::string_view x, std::string_view y) {
  return fmt::format("set title {}\nset xlabel {}\nset ylabel {}\n", gq(title), gq(x), gq(y));
}

// Axis labels alone, for a chart whose title plot_series sets.
std::string labels_cmd(std::string_view x, std::string_view y) {
  return fmt::format("set xlabel {}\nset ylabel {}\n", gq(x), gq(y));
}

// `plot DATA index 0 using ... title 'a', '' index 1 ...`: one clause per data block.
std::string plot_blocks(const std::vector<std::string>& titles, std::string_view using_style,
                        std::string_view extra = {}) {
  std::string cmd = "plot ";
  for (std::size_t i = 0; i < titles.size(); ++i) {
    cmd += fmt::format("{}{} index {} {} title {}{}", i == 0 ? "" : ", \\\n  ",
                       i == 0 ? "DATA" : "''", i, using_style, gq(titles[i]), extra);
  }
  return cmd + "\n";
}

// Where a chart's data lies, for axes that its panels share: x over every point, y over every
// value and over the positive ones (a log axis starts there).
struct extent {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_hi = -std::numeric_limits<double>::infinity(), y_pos_lo = -y_hi;
  void add(double x, double y) {
    if (std::isfinite(x)) {
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
    }
    if (std::isfinite(y)) {
      y_hi = std::max(y_hi, y);
      if (y > 0) y_pos_lo = std::min(y_pos_lo, y);
    }
  }
  bool has_positive() const { return y_hi > 0 && std::isfinite(y_pos_lo); }
};

// How a series chart's axes are set.
struct series_axes {
  bool log_y = false;
  bool log_x = false;                          // set by the chart's own commands
  std::optional<std::pair<double, double>> x;  // an explicit x range (else the data's)
  extent data;
};

// More series than this on one chart and they become one small panel each (issue 23: eight
// overplotted lines cannot be told apart).
constexpr std::size_t max_overplotted = 4;

// The y range of a chart: explicit, so that every panel of a small-multiples chart shares it.
std::string y_range(const series_axes& a) {
  if (a.log_y && a.data.has_positive()) {
    return fmt::format("set logscale y\nset yrange [{}:{}]\n", num(a.data.y_pos_lo / 1.5),
                       num(a.data.y_hi * 1.5));
  }
  const double top = a.data.y_hi > 0 ? a.data.y_hi * 1.05 : 1;
  return fmt::format("set yrange [0:{}]\n", num(top));
}

std::string x_range(const series_axes& a) {
  if (a.x) return fmt::format("set xrange [{}:{}]\n", num(a.x->first), num(a.x->second));
  if (std::isfinite(a.data.x_lo) && a.data.x_hi > a.data.x_lo) {
    return fmt::format("set xrange [{}:{}]\n", num(a.data.x_lo), num(a.data.x_hi));
  }
  return {};
}

// A round tic step giving about `count` tics over [lo, hi]: 1, 2 or 5 times a power of ten.
double nice_step(double lo, double hi, double count) {
  const double raw = (hi - lo) / count;
  if (!(raw > 0) || !std::isfinite(raw)) return 0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * magnitude) return m * magnitude;
  }
  return 10 * magnitude;
}

// Fewer tics and only horizontal grid lines in small panels: each tic and grid line is about a
// kilobyte of SVG, and a dozen per panel on nine panels would weigh more than the data.
std::string panel_tics(const series_axes& a, bool linear_x) {
  std::string out = "unset grid\nset grid ytics lc rgb '#dddddd'\n";
  const double x_lo = a.x ? a.x->first : a.data.x_lo, x_hi = a.x ? a.x->second : a.data.x_hi;
  if (linear_x) {
    if (const double step = nice_step(x_lo, x_hi, 4); step > 0) {
      out += fmt::format("set xtics {}\n", num(step));
    }
  }
  if (!a.log_y) {
    if (const double step = nice_step(0, a.data.y_hi, 3); step > 0) {
      out += fmt::format("set ytics {}\n", num(step));
    }
  }
  return out;
}

// The panel grid of a small-multiples chart of n panels, and the chart's height for it.
std::pair<std::size_t, std::size_t> panel_grid(std::size_t n) {
  const std::size_t columns = n <= 4 ? std::min<std::size_t>(n, 2) : (n <= 8 ? 2 : 3);
  return {(n + columns - 1) / columns, columns};
}

// Plots the data blocks 0..titles.size()-1 of `c` with `style`: on one chart with a key when
// there are few, else as small multiples (gnuplot multiplot), one panel per series titled with
// its name, every panel on the same axes and in its series' colour. `title` is the chart's.
void plot_series(chart& c, const std::string& title, const std::vector<std::string>& titles,
                 std::string_view style, const series_axes& axes) {
  c.body += x_range(axes) + y_range(axes);
  if (titles.size() <= max_overplotted) {
    c.body += "set title " + gq(title) + "\n" + plot_blocks(titles, style);
    return;
  }
  const auto [rows, columns] = panel_grid(titles.size());
  c.height = static_cast<int>(60 + rows * (columns == 3 ? 200 : 220));
  c.body += panel_tics(axes, !axes.log_x);
  c.body += fmt::format("unset key\nset multiplot layout {},{} title {}\n", rows, columns,
                        gq(title + " (one panel per strategy, shared axes)"));
  for (std::size_t i = 0; i < titles.size(); ++i) {
    c.body += fmt::format("set title {}\nplot DATA index {} {} lt {} notitle\n", gq(titles[i]), i,
                          style, i + 1);
  }
  c.body += "unset multiplot\n";
}

// Linear and log-y variants of one chart (make(false), make(true)); the log one only when
// there is something positive to draw on it.
void add_linear_and_log(std::vector<chart>& out, const std::function<chart(bool)>& make,
                        bool can_log) {
  out.push_back(make(false));
  if (can_log) out.push_back(make(true));
}

// ---- plain runs -----------------------------------------------------------------------------

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

// What the charts of a plain run share: its result, the time unit and the strategies' names.
struct plain_run {
  const scenario_result& r;
  std::string unit, per, time_label;
  std::vector<std::string> names;
};

// Request rate over time.
void rate_chart(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  const std::string& unit = run.unit;
  const std::string& names_per = run.per;
  std::string data;
  series_axes axes;
  for (const auto& s : r.strategies) {
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const double rate = width > 0 ? static_cast<double>(s.buckets[i].attempts) / width : 0;
      const double t = static_cast<double>(i) * width;
      axes.data.add(t, rate);
      data += num(t) + ' ' + num(rate) + '\n';
    }
    data += "\n\n";
  }
  // One strategy that drags on (seed 003's no-jitter backoff: 16 minutes against 40 s) would
  // squeeze the others into the first pixels; cut the axis near where most of them end, and
  // say so in the title.
  std::vector<double> ends;
  for (const auto& s : r.strategies) {
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    std::size_t last = 0;
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      if (s.buckets[i].attempts > 0) last = i + 1;
    }
    ends.push_back(static_cast<double>(last) * width);
  }
  std::vector<double> sorted = ends;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::string title = r.scenario + ": request rate";
  if (sorted.size() >= 3 && median > 0 && sorted.back() > 4 * median) {
    double cut = 0;
    for (double e : sorted) {
      if (e <= 4 * median) cut = std::max(cut, e);
    }
    cut *= 1.2;
    std::string longer;
    for (std::size_t i = 0; i < ends.size(); ++i) {
      if (ends[i] > cut) longer += (longer.empty() ? "" : ", ") + run.names[i];
    }
    title += fmt::format(", first {:.4g} {} (longer: {}, to {:.4g} {})", cut, unit, longer,
                         sorted.back(), unit);
    axes.x = {0.0, cut};
  }
  const auto make = [&](bool log) {
    chart c = make_chart(log ? "rate-log" : "rate",
                         "Request rate over time: attempts sent " + names_per +
                             (log ? " (log scale)" : " (rate-log has it on a log scale)"));
    c.embed = !log;
    c.data = data;
    series_axes a = axes;
    a.log_y = log;
    c.body = labels_cmd(run.time_label, "attempts " + names_per);
    plot_series(c, title + (log ? " (log scale)" : ""), run.names, "using 1:2 with steps lw 1.5",
                a);
    return c;
  };
  add_linear_and_log(out, make, axes.data.has_positive());
}

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
             y +
             "set style data histograms\nset style histogram clustered gap 1\n"
             "set style fill solid 0.85 border -1\nset xtics rotate by -20 nomirror\n"
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
             (spans(values, 100) ? "set logscale y\n" : "set yrange [0:*]\n") +
             "set style data histograms\nset style histogram clustered gap 1\n"
             "set style fill solid 0.85 border -1\nset xtics rotate by -20 nomirror\n"
             "plot DATA using 2:xtic(1) title 'attempts (requests sent)', "
             "'' using 3 title 'operations completed'\n";
    if (any_positive(values)) out.push_back(std::move(c));
  }
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

// The server's view, one chart per strategy: five series for each of up to eight strategies
// would be unreadable on one chart.
// With more strategies than fit one chart, the server's view as small multiples (embedded in
// the report; the per-strategy charts stay on disk): received, rejected, timed out and in
// service per strategy, on shared axes, the key in the first panel.
void server_panels(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  chart c = make_chart("server",
                       "The server's view per strategy: received, rejected, timed out, "
                       "in service (the per-strategy charts server-NAME have more)");
  series_axes axes;
  bool timeouts = false;
  std::vector<std::string> titles;
  double width = 0;
  for (const auto& s : r.strategies) {
    width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const auto& b = s.buckets[i];
      const double t = static_cast<double>(i) * width;
      c.data +=
          fmt::format("{} {} {} {} {}\n", num(t), b.attempts, b.errors, b.timeouts, b.in_service);
      timeouts = timeouts || b.timeouts > 0;
      for (const auto v : {b.attempts, b.errors, b.timeouts}) {
        axes.data.add(t, static_cast<double>(v));
      }
      axes.data.add(t, static_cast<double>(b.in_service));
    }
    c.data += "\n\n";
    titles.push_back(s.name);
  }
  if (!axes.data.has_positive()) return;
  std::vector<double> span{axes.data.y_pos_lo, axes.data.y_hi};
  axes.log_y = spans(span, 1000);
  const auto [rows, columns] = panel_grid(titles.size());
  c.height = static_cast<int>(60 + rows * (columns == 3 ? 200 : 220));
  c.body =
      labels_cmd(run.time_label, "requests (per bucket of " + num(width) + " " + run.unit + ")") +
      x_range(axes) + y_range(axes) + panel_tics(axes, true) +
      fmt::format("set multiplot layout {},{} title {}\n", rows, columns,
                  gq(r.scenario + ": the server's view (one panel per strategy, shared axes)"));
  for (std::size_t i = 0; i < titles.size(); ++i) {
    c.body += (i == 0 ? "set key inside top right font ',8'\n" : "unset key\n");
    c.body += fmt::format(
        "set title {1}\nplot DATA index {0} using 1:2 with steps lw 1.5 lt 1 title 'received', "
        "'' index {0} using 1:3 with steps lw 1.5 lt 2 title 'rejected', ",
        i, gq(titles[i]));
    if (timeouts) {
      c.body += fmt::format("'' index {} using 1:4 with steps lw 1.5 lt 6 title 'timed out', ", i);
    }
    c.body += fmt::format("'' index {} using 1:5 with steps lw 2 lt 3 title 'in service'\n", i);
  }
  c.body += "unset multiplot\n";
  out.push_back(std::move(c));
}

void server_charts(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  const std::string& unit = run.unit;
  const std::string& time_label = run.time_label;
  std::vector<std::string> used;
  for (const auto& s : r.strategies) {
    std::string name = "server-" + slug(s.name);
    while (std::find(used.begin(), used.end(), name) != used.end()) name += "-2";
    used.push_back(name);
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    chart c = make_chart(
        name, "The server's view per bucket of " + num(width) + " " + unit + ": " + s.name);
    bool timeouts = false;
    std::vector<double> values;
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const auto& b = s.buckets[i];
      c.data +=
          fmt::format("{} {} {} {} {} {} {}\n", num(static_cast<double>(i) * width), b.in_service,
                      b.queued, b.new_operations, b.attempts, b.errors, b.timeouts);
      timeouts = timeouts || b.timeouts > 0;
      values.insert(values.end(),
                    {static_cast<double>(b.in_service), static_cast<double>(b.queued),
                     static_cast<double>(b.new_operations), static_cast<double>(b.attempts),
                     static_cast<double>(b.errors), static_cast<double>(b.timeouts)});
    }
    if (!any_positive(values)) continue;
    c.body = title_cmd(r.scenario + ": the server's view, " + s.name, time_label,
                       "requests (per bucket of " + num(width) + " " + unit + ")") +
             (spans(values, 1000) ? "set logscale y\n" : "set yrange [0:*]\n") +
             "plot DATA using 1:5 with steps lw 1.5 title 'received (attempts)', "
             "'' using 1:4 with steps lw 1.5 title 'new operations', "
             "'' using 1:6 with steps lw 1.5 title 'rejected (errors)', " +
             (timeouts ? "'' using 1:7 with steps lw 1.5 title 'timed out', " : "") +
             "'' using 1:2 with steps lw 2 title 'in service (end of bucket)', "
             "'' using 1:3 with steps lw 2 title 'queued (end of bucket)'\n";
    c.embed = r.strategies.size() <= max_overplotted;
    out.push_back(std::move(c));
  }
  if (r.strategies.size() > max_overplotted) server_panels(run, out);
}

// The client window: one panel per strategy that has one, cwnd and ssthresh in two distinct
// colours (blue solid, vermilion dashed) so the two are never confused.
void window_chart(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  chart c = make_chart("window", "Client window (AIMD cwnd and ssthresh) over time");
  std::vector<std::string> titles;
  double max_cwnd = 0, max_ss = 0, max_t = 0;
  for (const auto& s : r.strategies) {
    if (!s.has_window) continue;
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const auto& b = s.buckets[i];
      const double t = static_cast<double>(i) * width;
      c.data += fmt::format("{} {} {}\n", num(t), num(b.cwnd), num(b.ssthresh));
      max_cwnd = std::max(max_cwnd, b.cwnd);
      max_t = std::max(max_t, t);
      if (std::isfinite(b.ssthresh)) max_ss = std::max(max_ss, b.ssthresh);
    }
    c.data += "\n\n";
    titles.push_back(s.name);
  }
  if (titles.empty() || !(max_cwnd > 0)) return;
  // The initial ssthresh is often far above any window reached; it would flatten the cwnd.
  const double top = max_ss > 3 * max_cwnd ? max_cwnd * 1.5 : std::max(max_cwnd, max_ss) * 1.05;
  const std::string title = r.scenario + ": client window";
  c.body = labels_cmd(run.time_label, "requests in flight") +
           fmt::format("set yrange [0:{}]\nset xrange [0:{}]\nset key inside top right\n", num(top),
                       num(max_t > 0 ? max_t : 1));
  const auto panel = [](std::size_t block) {
    return fmt::format(
        "plot DATA index {0} using 1:2 with steps lw 2 lc rgb '#0072B2' title 'cwnd', "
        "'' index {0} using 1:3 with steps lw 1.5 dt 2 lc rgb '#D55E00' title 'ssthresh'\n",
        block);
  };
  if (titles.size() == 1) {
    c.body += "set title " + gq(title + ", " + titles.front()) + "\n" + panel(0);
  } else {
    const auto [rows, columns] = panel_grid(titles.size());
    c.height = static_cast<int>(60 + rows * 220);
    series_axes a;
    a.x = {0.0, max_t > 0 ? max_t : 1};
    a.data.y_hi = top;
    c.body += panel_tics(a, true);
    c.body += fmt::format("set multiplot layout {},{} title {}\n", rows, columns,
                          gq(title + " (one panel per strategy, shared axes)"));
    for (std::size_t i = 0; i < titles.size(); ++i) {
      c.body += "set title " + gq(titles[i]) + "\n" + panel(i);
    }
    c.body += "unset multiplot\n";
  }
  out.push_back(std::move(c));
}

// The outage as a grey band behind a time chart, when the model has one.
std::string outage_band(const scenario_result& r) {
  if (!r.outage_s) return {};
  return fmt::format(
      "set object 1 rectangle from {}, graph 0 to {}, graph 1 behind fillcolor rgb '#e8e8e8' "
      "fillstyle solid 1.0 noborder\n",
      num(r.outage_s->first), num(r.outage_s->second));
}

// Around an outage: goodput, and concurrency on a log scale (it spans 10 to 10^5), the outage
// shaded in every panel.
void outage_charts(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  const std::string& per = run.per;
  const std::string& time_label = run.time_label;
  const std::vector<std::string>& names = run.names;
  if (r.outage) {
    chart g = make_chart("goodput", "Goodput (successes " + per + ") around the outage");
    chart n = make_chart("concurrency",
                         "Concurrency at the server (requests in service) around the outage");
    series_axes good, conc;
    for (const auto& s : r.strategies) {
      const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
      for (std::size_t i = 0; i < s.buckets.size(); ++i) {
        const auto& b = s.buckets[i];
        const double t = static_cast<double>(i) * width;
        const double rate = width > 0 ? static_cast<double>(b.successes) / width : 0;
        g.data += num(t) + ' ' + num(rate) + '\n';
        n.data += num(t) + ' ' + std::to_string(b.in_service) + '\n';
        good.data.add(t, rate);
        conc.data.add(t, static_cast<double>(b.in_service));
      }
      g.data += "\n\n";
      n.data += "\n\n";
    }
    g.body = labels_cmd(time_label, "successes " + per) + outage_band(r);
    plot_series(g, r.scenario + ": goodput", names, "using 1:2 with steps lw 1.5", good);
    conc.log_y = conc.data.has_positive();
    n.body = labels_cmd(time_label, "requests in service") + outage_band(r);
    plot_series(n, r.scenario + ": concurrency (log scale)", names, "using 1:2 with steps lw 1.5",
                conc);
    if (good.data.has_positive()) out.push_back(std::move(g));
    out.push_back(std::move(n));

    // Seed 004's own figures: each strategy's delay against the retry number, linear and log,
    // drawn from its policy with a fixed seed (as `backoff delays --plot` does). The model may
    // start the growth elsewhere (its `quirks`); this shows the policy itself.
    std::string data;
    std::vector<std::string> titles;
    series_axes delays;
    for (const auto& [name, policy] : r.policies) {
      int retry = 0;
      for_each_delay(policy, 1, 12, [&](duration delay) {
        const double wait = to_seconds(delay);
        data += std::to_string(++retry) + ' ' + num(wait) + '\n';
        delays.data.add(retry, wait);
      });
      data += "\n\n";
      titles.push_back(name);
    }
    if (!titles.empty()) {
      delays.data.x_lo = std::min(delays.data.x_lo, 0.0);
      const auto make = [&](bool log) {
        chart d = make_chart(log ? "delays-log" : "delays",
                             std::string("Each strategy's backoff policy: delay before retry n") +
                                 (log ? " (log scale)" : ""));
        d.data = data;
        d.embed = log;  // delays span decades: the log chart is the one to read
        series_axes a = delays;
        a.log_y = log;
        d.body = labels_cmd("retry number (after failure n)", "delay (s)");
        plot_series(d, r.scenario + ": delay before each retry" + (log ? " (log scale)" : ""),
                    titles, "using 1:2 with linespoints lw 1.5 pt 7 ps 0.6", a);
        return d;
      };
      add_linear_and_log(out, make, delays.data.has_positive());
    }
  }
}

// The server work a model reports (recorder::work) per second over time, the outage shaded:
// outage-amplification's load over its base rate.
void work_chart(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  std::string label;
  for (const auto& s : r.strategies) {
    if (!s.work_label.empty()) label = s.work_label;
  }
  if (label.empty()) return;
  chart c = make_chart(
      "work", "Server work over time: " + label + (r.outage_s ? " (the outage shaded)" : ""));
  series_axes axes;
  for (const auto& s : r.strategies) {
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const double v = width > 0 ? s.buckets[i].work / width : 0;
      const double t = static_cast<double>(i) * width;
      c.data += num(t) + ' ' + num(v) + '\n';
      axes.data.add(t, v);
    }
    c.data += "\n\n";
  }
  if (!axes.data.has_positive()) return;
  c.body = labels_cmd(run.time_label, label) + outage_band(r);
  plot_series(c, r.scenario + ": server work", run.names, "using 1:2 with steps lw 1.5", axes);
  out.push_back(std::move(c));
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
             "set style data histograms\nset style histogram clustered gap 1\n"
             "set style fill solid 0.85 border -1\nset xtics rotate by -20 nomirror\n" +
             plot + "\n";
    out.push_back(std::move(c));
  }
}

void plain_charts(const scenario_result& r, const fs::path& dir, std::vector<chart>& out) {
  if (r.strategies.empty()) return;
  const bool ticks = is_ticks(r.strategies.front().seconds_per_unit);
  plain_run run{r,
                ticks ? "ticks" : "s",
                ticks ? "per tick" : "per second",
                ticks ? "time (ticks)" : "time (s)",
                {}};
  for (const auto& s : r.strategies) run.names.push_back(s.name);
  rate_chart(run, out);
  summary_charts(run, out);
  client_charts(run, dir / "clients.csv", out);
  server_charts(run, out);
  window_chart(run, out);
  outage_charts(run, out);
  work_chart(run, out);
  field_charts(run, out);
}

// ---- sweeps ---------------------------------------------------------------------------------

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

// One metric against the sweep's key: each line's mean over the replications at each x, with
// its 95 % confidence interval drawn as a band (filledcurves from mean - ci to mean + ci) when
// there are replications. Up to four lines share one chart; more become one panel per strategy
// (shared axes), each with one line per value of the other keys, in the same colour everywhere.
// None when nothing positive is to be drawn.
std::optional<chart> sweep_metric_chart(const scenario_result& r, const sweep_lines& l,
                                        const metric& m) {
  const bool ci = r.replications > 1;
  const std::string of = ci ? fmt::format(" (mean of {} runs, 95 % CI band)", r.replications) : "";
  chart c =
      make_chart("sweep-" + slug(m.field), fmt::format("{} against {}{}", m.title, l.key, of));
  struct line {
    std::size_t block;
    std::size_t index;  // into l.names
  };
  std::vector<line> drawn;
  series_axes axes;
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
  if (drawn.empty() || !axes.data.has_positive()) return std::nullopt;
  std::string body = labels_cmd(l.x_label, m.label);
  axes.log_y = !m.percent && spans({axes.data.y_pos_lo, axes.data.y_hi}, 100);
  if (m.percent) {
    axes.data.y_hi = 105 / 1.05;
  }
  // The band's edges, kept inside what the axis can show: 0..100 for a share, above the axis'
  // bottom on a log scale (a CI reaching below zero would otherwise leave a hole).
  const double floor = axes.log_y ? axes.data.y_pos_lo / 1.5 : (m.percent ? 0.0 : -1e300);
  const std::string lo = fmt::format("($2-$3<{0}?{0}:$2-$3)", num(floor));
  const std::string hi = m.percent ? "($2+$3>100?100:$2+$3)" : "($2+$3)";
  if (!l.numeric_x) {
    std::string tics = "set xtics (";
    for (std::size_t i = 0; i < l.categories.size(); ++i) {
      tics += fmt::format("{}{} {}", i == 0 ? "" : ", ", gq(l.categories[i]), i);
    }
    body += tics + ")\n";
    axes.x = {-0.5, static_cast<double>(l.categories.size()) - 0.5};
  } else {
    body += "set offsets graph 0.02, graph 0.02, 0, 0\n";
  }
  body += x_range(axes) + y_range(axes);
  // One clause per line: its band (no key entry), then its line; `lt` picks the colour.
  const auto clauses = [&](const std::vector<std::pair<const line*, std::size_t>>& lines,
                           bool with_titles) {
    std::string cmd = "plot ";
    bool first = true;
    for (const auto& [ln, colour] : lines) {
      const std::string source =
          (first ? std::string("DATA") : std::string("''")) + fmt::format(" index {}", ln->block);
      if (ci) {
        cmd += fmt::format(
            "{}{} using 1:{}:{} with filledcurves fs transparent solid 0.18 noborder lt {} notitle",
            first ? "" : ", \\\n  ", source, lo, hi, colour);
        first = false;
      }
      const std::string& name = with_titles ? l.names[ln->index] : l.others[ln->index];
      cmd += fmt::format("{}{} index {} using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 lt {} {}",
                         first ? "" : ", \\\n  ", first ? "DATA" : "''", ln->block, colour,
                         name.empty() ? std::string("notitle") : "title " + gq(name));
      first = false;
    }
    return cmd + "\n";
  };
  const std::string title = r.scenario + ": " + m.title + " vs " + l.key;
  if (drawn.size() <= max_overplotted) {
    std::vector<std::pair<const line*, std::size_t>> all;
    for (const auto& d : drawn) all.push_back({&d, all.size() + 1});
    body += "set title " + gq(title) + "\n" + clauses(all, true);
  } else {
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
    c.height = static_cast<int>(60 + rows * (columns == 3 ? 200 : 220));
    body += panel_tics(axes, l.numeric_x);
    body += fmt::format("set key inside top left font ',8'\nset multiplot layout {},{} title {}\n",
                        rows, columns, gq(title + " (one panel per strategy, shared axes)"));
    for (const std::string& panel : panels) {
      std::vector<std::pair<const line*, std::size_t>> lines;
      for (const auto& d : drawn) {
        if (l.strategy[d.index] != panel) continue;
        const auto colour = static_cast<std::size_t>(
            std::find(other_values.begin(), other_values.end(), l.others[d.index]) -
            other_values.begin());
        lines.push_back({&d, colour + 1});
      }
      body += "set title " + gq(panel) + "\n" + clauses(lines, false);
    }
    body += "unset multiplot\n";
  }
  c.body = std::move(body);
  return c;
}

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

// ---- metastable maps ------------------------------------------------------------------------

// The boundary points of one map, by load.
std::vector<const boundary_point*> points_of(const scenario_result& r, const map_axes& m) {
  std::vector<const boundary_point*> out;
  for (const auto& b : r.boundary) {
    if (b.model == m.model && b.mapped == m.mapped && b.strategy == m.strategy) out.push_back(&b);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto* a, const auto* b) { return a->load < b->load; });
  return out;
}

// The maps of a result: its map_axes, or one per (model, mapped, strategy) of its boundary points
// when the producer gave none (their keys then unnamed).
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

// ---- the report -----------------------------------------------------------------------------

// A table cell: text (escaped here) and whether it is a number (right-aligned).
struct html_cell {
  std::string text;
  bool number = false;
};

std::string html_table(std::string_view id, const std::vector<html_cell>& header,
                       const std::vector<std::vector<html_cell>>& rows) {
  std::string h = "<table class=\"ranking\" id=\"" + std::string(id) + "\">\n<thead><tr>";
  for (const auto& c : header) {
    h += std::string(c.number ? "<th class=\"num\">" : "<th>") + html_escape(c.text) + "</th>";
  }
  h += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    h += "<tr>";
    for (const auto& c : row) {
      h += std::string(c.number ? "<td class=\"num\">" : "<td>") + html_escape(c.text) + "</td>";
    }
    h += "</tr>\n";
  }
  return h + "</tbody>\n</table>\n";
}

std::string latency_cell(const std::optional<double>& v) {
  return v ? format_latency(*v) : "-";
}

std::string recovers_cell(const ranking_row& row) {
  if (row.runs > 1) return fmt::format("{} of {} runs", row.recovered_runs, row.runs);
  return row.recovered_runs > 0 ? "yes" : "no";
}

// The ranking of a plain run: its table and its answers.
std::string ranking_html(const ranking& k, std::vector<std::string>& answers) {
  std::vector<html_cell> header{{"#", true},
                                {"strategy"},
                                {"success %", true},
                                {"load x (attempts/op)", true},
                                {"p50 (" + k.unit + ")", true},
                                {"p99 (" + k.unit + ")", true},
                                {"max (" + k.unit + ")", true}};
  if (k.outage) header.push_back({"recovers"});
  std::vector<std::vector<html_cell>> rows;
  for (std::size_t i = 0; i < k.rows.size(); ++i) {
    const ranking_row& row = k.rows[i];
    std::vector<html_cell> cells{
        {std::to_string(i + 1), true},       {row.name},
        {format_percent(row.success), true}, {format_attempts(row.attempts_per_operation), true},
        {latency_cell(row.p50), true},       {latency_cell(row.p99), true},
        {latency_cell(row.max), true}};
    if (k.outage) cells.push_back({recovers_cell(row)});
    rows.push_back(std::move(cells));
  }
  answers = k.sentences;
  std::string rule = k.outage ? "runs that recovered after the outage (more first), then " : "";
  return html_table("ranking", header, rows) + "<p class=\"rule\">Ranked by " + html_escape(rule) +
         "success (completed / operations, as shown), then p99 latency (lower first; none "
         "last), then attempts per operation (fewer first). Latency is over the completed "
         "operations; load x is attempts per operation (the <code>load</code> field).</p>\n";
}

// A sweep: the ranking at each point (its replications' means), the winner and the two answers.
std::string sweep_ranking_html(const scenario_result& r, std::vector<std::string>& answers) {
  std::vector<html_cell> header{{"point"},        {"first"},     {"success %", true},
                                {"load x", true}, {"p99", true}, {"fewest calls"},
                                {"shortest p99"}};
  if (r.outage) header.push_back({"recover"});
  std::vector<std::vector<html_cell>> rows;
  std::string unit = "s";
  for (const auto& p : r.points) {
    const ranking k = rank_point(r, p);
    if (k.rows.empty()) continue;
    unit = k.unit;
    const ranking_row& first = k.rows.front();
    const ranking_row* fewest = &first;
    const ranking_row* shortest = nullptr;
    std::size_t recovering = 0;
    for (const auto& row : k.rows) {
      if (row.attempts_per_operation < fewest->attempts_per_operation) fewest = &row;
      if (row.p99 && (shortest == nullptr || *row.p99 < *shortest->p99)) shortest = &row;
      if (row.recovered_runs > 0) ++recovering;
    }
    const std::vector<std::string> tied = tied_first(k);
    std::string first_cell = first.name;
    if (tied.size() > 1) {
      first_cell = "tie: ";
      for (std::size_t i = 0; i < tied.size(); ++i) first_cell += (i ? ", " : "") + tied[i];
    }
    std::vector<html_cell> cells{
        {point_label(p)},
        {first_cell},
        {format_percent(first.success), true},
        {format_attempts(first.attempts_per_operation), true},
        {first.p99 ? format_latency(*first.p99) + " " + unit : "-", true},
        {fmt::format("{} ({}, {} %)", fewest->name, format_attempts(fewest->attempts_per_operation),
                     format_percent(fewest->success))},
        {shortest ? fmt::format("{} ({} {}, {} %)", shortest->name, format_latency(*shortest->p99),
                                unit, format_percent(shortest->success))
                  : "-"}};
    if (r.outage) cells.push_back({fmt::format("{} of {} strategies", recovering, k.rows.size())});
    rows.push_back(std::move(cells));
  }
  if (rows.empty()) return {};
  answers.push_back("Over the sweep: " + verdict(r) + ".");
  const std::string of = r.replications > 1
                             ? fmt::format("the means of its {} replications", r.replications)
                             : std::string("its run");
  return html_table("ranking", header, rows) +
         "<p class=\"rule\">Each row ranks the strategies at one point on " + html_escape(of) +
         (r.outage ? ": runs that recovered (more first), then" : ":") +
         " success (as shown), then p99 latency, then attempts per operation; <em>first</em> is "
         "the top of that ranking, with its success %, load x (attempts per operation) and p99 "
         "(a <em>tie</em> when the next ones have the same success and recovery and a p99 and "
         "attempts within 5 %: the order among them is then no advice). "
         "Fewest calls and shortest p99 are over all strategies at the point, with their "
         "success %.</p>\n";
}

// A metastable map: its boundary points instead of a ranking (there is nothing to rank).
std::string boundary_html(const scenario_result& r, std::vector<std::string>& answers) {
  std::vector<std::vector<html_cell>> rows;
  for (const map_axes& m : maps_of(r)) {
    const auto points = points_of(r, m);
    if (points.empty()) continue;
    const std::string unit = m.trigger_unit.empty() ? "" : " " + m.trigger_unit;
    const boundary_point* lowest = nullptr;
    std::size_t always = 0, never = 0;
    for (const boundary_point* b : points) {
      const std::string note = b->always_down  ? "always down (the smallest trigger tips it)"
                               : b->never_down ? "never down (the largest trigger recovers)"
                                               : "";
      rows.push_back({{m.mapped},
                      {m.strategy},
                      {format_latency(b->load), true},
                      {format_latency(b->trigger), true},
                      {format_latency(b->trigger_lo), true},
                      {format_latency(b->trigger_hi), true},
                      {std::to_string(b->replications), true},
                      {std::to_string(b->probes), true},
                      {note}});
      always += b->always_down ? 1 : 0;
      never += b->never_down ? 1 : 0;
      if (!b->always_down && !b->never_down && (lowest == nullptr || b->trigger < lowest->trigger))
        lowest = b;
    }
    std::string answer =
        fmt::format("{} ({}): {} loads mapped", m.mapped, m.strategy, points.size());
    if (lowest != nullptr) {
      answer += fmt::format(
          "; the smallest trigger that keeps it down is {}{} (between {} and {}) at {} = {}",
          format_latency(lowest->trigger), unit, format_latency(lowest->trigger_lo),
          format_latency(lowest->trigger_hi), m.load_key, format_latency(lowest->load));
    }
    if (always > 0) answer += fmt::format("; {} loads stay down after any trigger", always);
    if (never > 0) answer += fmt::format("; {} loads recover from every trigger tried", never);
    answers.push_back(answer + ".");
  }
  if (rows.empty()) return {};
  std::string load = "load", trigger = "trigger";
  if (const auto maps = maps_of(r); maps.size() == 1) {
    load = axis_label(maps.front().load_key, maps.front().load_unit);
    trigger = axis_label(maps.front().trigger_key, maps.front().trigger_unit);
  }
  return html_table("boundary",
                    {{"mapped"},
                     {"strategy"},
                     {load, true},
                     {trigger + ": boundary", true},
                     {"recovers up to", true},
                     {"stays down from", true},
                     {"replications", true},
                     {"probes", true},
                     {"note"}},
                    rows) +
         "<p class=\"rule\">Each row is one base load: the bisection brackets the trigger "
         "between the largest seen to recover and the smallest seen to stay down (each probe "
         "run <em>replications</em> times); the boundary is their midpoint.</p>\n";
}

// gnuplot's SVG without what draws nothing: the indentation, and the empty groups it writes
// around every tic and grid line (a third of a small-multiples chart). Only whole lines that
// are an empty group's open and close tags go; every drawing element is kept as it was.
std::string compact_svg(std::string_view svg) {
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < svg.size();) {
    std::size_t end = svg.find('\n', at);
    if (end == std::string_view::npos) end = svg.size();
    std::string_view line = svg.substr(at, end - at);
    const std::size_t first = line.find_first_not_of(" \t");
    lines.push_back(first == std::string_view::npos ? std::string_view{} : line.substr(first));
    at = end + 1;
  }
  const auto opens_group = [](std::string_view l) {
    return l.starts_with("<g ") && l.ends_with(">") && !l.ends_with("/>") &&
           l.find('<', 1) == std::string_view::npos;
  };
  std::vector<std::string_view> kept;
  for (std::string_view line : lines) {
    if (line.empty()) continue;
    if (line == "</g>" && !kept.empty() && opens_group(kept.back())) {
      kept.pop_back();  // an empty group, possibly emptied by this pass
      continue;
    }
    kept.push_back(line);
  }
  std::string out;
  out.reserve(svg.size());
  for (std::string_view line : kept) {
    out += line;
    out += '\n';
  }
  return out;
}

// How a chart is embedded: its SVG as a data: URI, percent-encoded rather than base64 (base64
// adds a third). Only what would change meaning is encoded: '%' (an escape), '#' (a URL's
// fragment), '"' and '&' (the HTML attribute), controls (a URL parser drops newlines and tabs)
// and bytes above ASCII; '<', '>' and gnuplot's single quotes are plain in both a data: URL's
// body (WHATWG URL: an opaque path percent-encodes only controls) and an attribute value.
std::string svg_data_uri(std::string_view svg) {
  std::string out = "data:image/svg+xml;charset=utf-8,";
  out.reserve(out.size() + svg.size() + svg.size() / 8);
  for (const char ch : svg) {
    const auto c = static_cast<unsigned char>(ch);
    const bool raw = c >= 0x20 && c < 0x7f && ch != '%' && ch != '#' && ch != '"' && ch != '&';
    if (raw) {
      out += ch;
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

void write_report(const scenario_result& r, output_folder& folder, const report_inputs& inputs,
                  const std::vector<chart>& charts) {
  std::string h;
  const std::string name = html_escape(r.scenario);
  std::vector<std::string> answers;
  std::string advice;
  std::string heading;
  if (!r.boundary.empty()) {
    heading = "Where it tips";
    advice = boundary_html(r, answers);
  } else if (r.sweep) {
    heading = "Which strategy, point by point";
    advice = sweep_ranking_html(r, answers);
  } else if (!r.strategies.empty()) {
    heading = "Which strategy";
    advice = ranking_html(rank_plain(r), answers);
  }
  const std::string one_line = verdict(r);

  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>backoff sim: " + name + "</title>\n";
  // The index (write_report_index) reads the verdict back from here.
  if (!one_line.empty()) {
    h += "<meta name=\"backoff-verdict\" content=\"" + html_escape(one_line) + "\">\n";
  }
  h += R"(<style>
body { font-family: "DejaVu Sans", sans-serif; margin: 1.5em auto; max-width: 1000px; color: #222; }
h1 { margin-bottom: 0.2em; }
p.lede { font-size: 1.1em; color: #333; margin-top: 0.2em; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.facts dt { font-weight: bold; }
dl.facts dd { margin: 0; }
table.ranking { border-collapse: collapse; font-size: 0.92em; margin: 0.5em 0; }
table.ranking th, table.ranking td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em;
      text-align: left; vertical-align: top; }
table.ranking th { background: #f0f0f0; }
table.ranking .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table#ranking tbody tr:first-child td { font-weight: bold; }
p.rule { color: #555; font-size: 0.85em; }
div.beside { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; margin: 1em 0; }
div.beside > div { border: 1px solid #ddd; background: #fafafa; padding: 0.3em 0.9em; }
div.beside h3 { margin: 0.4em 0; font-size: 1em; }
div.beside ul { padding-left: 1.2em; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 0.6em; overflow-x: auto;
      font-size: 12px; line-height: 1.3; }
figure { margin: 1.5em 0; }
figure img { display: block; width: 900px; max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.9em; margin-top: 0.3em; }
nav a { margin-right: 0.8em; }
</style>
</head>
<body data-images="pending">
)";
  h += "<h1>" + name + "</h1>\n";
  if (!r.description.empty()) h += "<p class=\"lede\">" + html_escape(r.description) + "</p>\n";

  if (!advice.empty()) {
    h += "<h2 id=\"advice\">" + html_escape(heading) + "</h2>\n" + advice;
  }
  // Our answers, and beside them what the scenario's source says.
  if (!answers.empty() || !r.claim.empty() || !r.source.empty()) {
    h += "<div class=\"beside\">\n<div class=\"ours\"><h3>Our result</h3>\n<ul>\n";
    for (const auto& a : answers) h += "<li>" + html_escape(a) + "</li>\n";
    if (answers.empty()) h += "<li>(nothing ran)</li>\n";
    h += "</ul></div>\n<div class=\"source\"><h3>The source's claim</h3>\n";
    if (!r.claim.empty()) h += "<p class=\"claim\">" + html_escape(r.claim) + "</p>\n";
    if (!r.source.empty()) {
      h += "<p class=\"cite\">Source: " + html_escape(r.source) + "</p>\n";
    }
    if (r.claim.empty() && r.source.empty()) {
      h += "<p>(the scenario has no <code>[about]</code> claim)</p>\n";
    }
    h += "</div>\n</div>\n";
  }

  h += "<h2 id=\"facts\">Run</h2>\n<dl class=\"facts\">\n";
  const auto fact = [&](std::string_view k, const std::string& v) {
    h += "<dt>" + html_escape(k) + "</dt><dd>" + html_escape(v) + "</dd>\n";
  };
  fact("model", r.model);
  fact("seed", std::to_string(r.seed));
  if (!inputs.scenario_path.empty()) fact("scenario file", inputs.scenario_path);
  if (r.sweep) {
    std::string keys;
    for (const auto& k : r.sweep_keys) keys += (keys.empty() ? "" : ", ") + k;
    fact("swept", keys.empty() ? "(replications only)" : keys);
    fact("points", std::to_string(r.points.size()));
    fact("replications", std::to_string(r.replications));
  } else if (!r.strategies.empty()) {
    fact("strategies", std::to_string(r.strategies.size()));
  }
  fact("events", std::to_string(r.events));
  std::string sets;
  for (const auto& s : inputs.sets) sets += (sets.empty() ? "" : ", ") + s;
  if (!sets.empty()) fact("overrides (--set)", sets);
  h += "</dl>\n";

  h += "<nav>";
  if (!advice.empty()) h += "<a href=\"#advice\">" + html_escape(heading) + "</a>";
  for (const auto& c : charts) {
    if (c.embed) h += "<a href=\"#" + html_escape(c.name) + "\">" + html_escape(c.name) + "</a>";
  }
  h += "<a href=\"#table\">comparison table</a>";
  if (!inputs.scenario_toml.empty()) h += "<a href=\"#parameters\">parameters</a>";
  h += "</nav>\n";

  h += "<h2>Charts</h2>\n";
  std::string on_disk;
  for (const auto& c : charts) {
    if (!c.embed) on_disk += (on_disk.empty() ? "" : ", ") + c.name;
  }
  if (!on_disk.empty()) {
    h += "<p class=\"rule\">Also in this folder, not shown here (as PNG and SVG): " +
         html_escape(on_disk) + ".</p>\n";
  }
  for (const auto& c : charts) {
    if (!c.embed) continue;
    // SVG, not PNG: it is the same bytes with the same gnuplot and scales on any screen. The PNG
    // beside it on disk is for documents and slides.
    const std::string svg = read_whole_file(folder.dir() / (c.name + ".svg"));
    h += "<figure id=\"" + html_escape(c.name) + "\">\n<img class=\"chart\" alt=\"" +
         html_escape(c.caption) + "\" width=\"" + std::to_string(c.width) + "\" height=\"" +
         std::to_string(c.height) + "\" src=\"" + svg_data_uri(compact_svg(svg)) +
         "\">\n<figcaption>" + html_escape(c.caption) + " (" + html_escape(c.name) + ".png, " +
         html_escape(c.name) + ".svg)</figcaption>\n</figure>\n";
  }
  h += "<h2 id=\"table\">Comparison</h2>\n<pre>" + html_escape(comparison_table(r)) + "</pre>\n";
  if (!inputs.scenario_toml.empty()) {
    h += "<h2 id=\"parameters\">Parameters</h2>\n";
    if (!sets.empty()) h += "<p>Overridden with --set: " + html_escape(sets) + "</p>\n";
    h += "<pre>" + html_escape(inputs.scenario_toml) + "</pre>\n";
  }
  // Lets a headless browser (tests/browser/report_screenshot.sh) tell that every chart decoded.
  h += R"(<script>
window.addEventListener("load", function () {
  var imgs = document.querySelectorAll("img.chart"), ok = 0;
  for (var i = 0; i < imgs.length; ++i) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) ++ok;
  }
  document.body.setAttribute("data-images",
      (ok === imgs.length ? "images-ok " : "images-broken ") + ok + "/" + imgs.length);
});
</script>
</body>
</html>
)";
  folder.write("report.html", h);
}

}  // namespace

std::vector<std::string> write_plots(const scenario_result& r, const fs::path& dir,
                                     const report_inputs& inputs, const plot_options& options) {
  output_folder folder(dir, output_folder::manifest::add);
  std::vector<chart> charts;
  phase_charts(r, charts);
  if (r.sweep) {
    sweep_charts(r, charts);
  } else {
    plain_charts(r, dir, charts);
  }
  if (!charts.empty()) draw(charts, dir, options);
  std::vector<std::string> names;
  for (const auto& c : charts) {
    names.push_back(c.name);
    folder.adopt(c.name + ".png");
    folder.adopt(c.name + ".svg");
  }
  write_report(r, folder, inputs, charts);
  folder.finish();
  return names;
}

namespace {

// The one-line verdict a report put in its <meta name="backoff-verdict"> (already escaped for
// HTML there: it holds no quote), read back for the index; empty when the link leaves the folder
// or the report has none.
std::string verdict_of_report(const fs::path& dir, const std::string& href) {
  const fs::path rel(href);
  if (rel.empty() || rel.is_absolute()) return {};
  for (const auto& part : rel) {
    if (part == "..") return {};
  }
  std::error_code ec;
  if (!fs::is_regular_file(dir / rel, ec)) return {};
  const std::string html = read_whole_file(dir / rel);
  const std::string tag = "<meta name=\"backoff-verdict\" content=\"";
  const std::size_t at = html.find(tag);
  if (at == std::string::npos) return {};
  const std::size_t begin = at + tag.size();
  const std::size_t end = html.find('"', begin);
  if (end == std::string::npos) return {};
  return html.substr(begin, end - begin);
}

}  // namespace

void write_report_index(output_folder& folder, const std::vector<report_link>& links) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<title>backoff sim: reports</title></head>\n<body>\n<h1>backoff sim: reports</h1>\n"
         "<ul>\n";
  for (const auto& link : links) {
    out << "<li><a href=\"" << html_escape(link.href) << "\">" << html_escape(link.scenario)
        << "</a> (model " << html_escape(link.model) << ", seed " << link.seed << ")";
    const std::string verdict = verdict_of_report(folder.dir(), link.href);
    if (!verdict.empty()) out << ": " << verdict;
    out << "</li>\n";
  }
  out << "</ul>\n</body></html>\n";
  folder.write("index.html", out.str());
}

void write_delay_plots(const std::vector<std::vector<double>>& delays, const std::string& policy,
                       const fs::path& prefix, const plot_options& options) {
  // The user's folder: nothing is listed or removed there, only the four files are written.
  const output_folder folder(prefix.parent_path(), output_folder::manifest::none);
  const fs::path& dir = folder.dir();
  const std::string base = prefix.filename().string();
  chart c = make_chart(base, "Delay before each retry");
  std::vector<std::string> titles;
  std::vector<double> values;
  for (std::size_t run = 0; run < delays.size(); ++run) {
    for (std::size_t n = 0; n < delays[run].size(); ++n) {
      c.data += fmt::format("{} {}\n", n + 1, num(delays[run][n]));
      values.push_back(delays[run][n]);
    }
    c.data += "\n\n";
    titles.push_back(fmt::format("run {}", run + 1));
  }
  const bool many = delays.size() > 10;
  // The policy's canonical text is long: a second title line, so the title fits the chart
  // (a double-quoted gnuplot string, where backslash-n is a line break).
  // Only this constant is double-quoted (for its \n); the policy joins it single-quoted.
  c.body = fmt::format("set title \"Delay before each retry\\n\".{}\n", gq(policy)) +
           fmt::format("set xlabel {}\nset ylabel {}\n", gq("retry number (after failure n)"),
                       gq("delay (s)")) +
           (many ? "unset key\n" : "") +
           plot_blocks(titles, many ? "using 1:2 with lines lw 1"
                                    : "using 1:2 with linespoints "
                                      "lw 1.5 pt 7 ps 0.6");
  // The log variant; with no positive delay a log scale cannot show it, but the files are
  // promised: it is drawn linear.
  chart log = c;
  log.name += "-log";
  if (any_positive(values)) {
    log.caption += " (log scale)";
    log.body = "set logscale y\n" + log.body;
  }
  std::vector<chart> charts{std::move(c), std::move(log)};
  draw(charts, dir, options);
}

}  // namespace backoff::report
