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
#include "csv.hpp"
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
      default:
        out += c;
    }
  }
  return out;
}

// A small encoder rather than a dependency: Boost's is in a detail namespace.
std::string base64(std::string_view in) {
  static constexpr char table[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const auto n = (std::uint32_t{static_cast<unsigned char>(in[i])} << 16) |
                   (std::uint32_t{static_cast<unsigned char>(in[i + 1])} << 8) |
                   std::uint32_t{static_cast<unsigned char>(in[i + 2])};
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += table[(n >> 6) & 63];
    out += table[n & 63];
  }
  if (i + 1 == in.size()) {
    const auto n = std::uint32_t{static_cast<unsigned char>(in[i])} << 16;
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const auto n = (std::uint32_t{static_cast<unsigned char>(in[i])} << 16) |
                   (std::uint32_t{static_cast<unsigned char>(in[i + 1])} << 8);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += table[(n >> 6) & 63];
    out += '=';
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
    std::string body = c.body;
    for (std::size_t at = body.find("DATA"); at != std::string::npos;
         at = body.find("DATA", at + 1)) {
      body.replace(at, 4, gq(data));
    }
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

// Linear and log-y variants of one time-series chart; the log one only when it can be drawn.
void add_linear_and_log(std::vector<chart>& out, chart c, const std::vector<double>& values) {
  chart log = c;
  out.push_back(std::move(c));
  if (!any_positive(values)) return;
  log.name += "-log";
  log.caption += " (log scale)";
  log.body = "set logscale y\n" + log.body;
  if (const std::size_t at = log.body.find("set title '"); at != std::string::npos) {
    log.body.insert(log.body.find('\n', at) - 1, " (log scale)");
  }
  out.push_back(std::move(log));
}

// ---- plain runs -----------------------------------------------------------------------------

struct client_row {
  double latency;
  double attempts;
  bool completed;
};

// clients.csv grouped by strategy (columns strategy,id,first_attempt_s,done_s,attempts,
// latency_s,status).
std::map<std::string, std::vector<client_row>> read_clients(const fs::path& file) {
  std::map<std::string, std::vector<client_row>> out;
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> field;
  if (!csv_read_record(in, field)) return out;  // the header
  while (csv_read_record(in, field)) {
    if (field.size() != 7) continue;
    try {
      out[field[0]].push_back({std::stod(field[5]), std::stod(field[4]), field[6] == "completed"});
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
  const std::string& per = run.per;
  const std::string& time_label = run.time_label;
  const std::vector<std::string>& names = run.names;
  chart c = make_chart("rate", "Request rate over time: attempts sent " + per);
  std::vector<double> values;
  for (const auto& s : r.strategies) {
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const double rate = width > 0 ? static_cast<double>(s.buckets[i].attempts) / width : 0;
      values.push_back(rate);
      c.data += num(static_cast<double>(i) * width) + ' ' + num(rate) + '\n';
    }
    c.data += "\n\n";
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
  std::string title = r.scenario + ": request rate", range;
  if (sorted.size() >= 3 && median > 0 && sorted.back() > 4 * median) {
    double cut = 0;
    for (double e : sorted) {
      if (e <= 4 * median) cut = std::max(cut, e);
    }
    cut *= 1.2;
    std::string longer;
    for (std::size_t i = 0; i < ends.size(); ++i) {
      if (ends[i] > cut) longer += (longer.empty() ? "" : ", ") + names[i];
    }
    title += fmt::format(", first {:.4g} {} (longer: {}, to {:.4g} {})", cut, unit, longer,
                         sorted.back(), unit);
    range = fmt::format("set xrange [0:{}]\n", num(cut));
  }
  c.body = title_cmd(title, time_label, "attempts " + per) + range +
           plot_blocks(names, "using 1:2 with steps lw 1.5");
  add_linear_and_log(out, std::move(c), values);
}

// Latency percentiles and totals per strategy.
void summary_charts(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  const std::string& unit = run.unit;
  {
    chart c = make_chart("latency", "Latency percentiles per strategy");
    std::vector<double> values;
    for (const auto& s : r.strategies) {
      // A strategy where nothing completed has no latency: NaN, which gnuplot leaves out.
      const double nan = std::nan("");
      const latency_summary l =
          s.latency_s.value_or(latency_summary{nan, nan, nan, nan, nan, nan, nan});
      c.data += fmt::format("{} {} {} {} {} {} {}\n", dq(s.name), num(l.p50), num(l.p75),
                            num(l.p90), num(l.p95), num(l.p99), num(l.max));
      if (s.latency_s) values.insert(values.end(), {l.p50, l.p75, l.p90, l.p95, l.p99, l.max});
    }
    c.body = title_cmd(r.scenario + ": latency percentiles per strategy", "strategy",
                       "latency (" + unit + ")") +
             (spans(values, 100) ? "set logscale y\n" : "set yrange [0:*]\n") +
             "set style data histograms\nset style histogram clustered gap 1\n"
             "set style fill solid 0.85 border -1\nset xtics rotate by -20 nomirror\n"
             "plot DATA using 2:xtic(1) title 'p50', '' using 3 title 'p75', "
             "'' using 4 title 'p90', '' using 5 title 'p95', '' using 6 title 'p99', "
             "'' using 7 title 'max'\n";
    if (any_positive(values)) out.push_back(std::move(c));
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

// The latency distribution of the completed operations, one line per strategy: the fraction
// done within each latency (hedged against not, in hedging-tail). The tail is what matters, so
// every point above the median is kept and the rest thinned.
void latency_cdf_chart(const plain_run& run, std::map<std::string, std::vector<client_row>>& rows,
                       std::vector<chart>& out) {
  chart c = make_chart("latency-cdf",
                       "Latency distribution: the fraction of completed operations done within a "
                       "latency");
  std::vector<std::string> titles;
  std::vector<double> latencies;
  constexpr std::size_t max_points = 2000;
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
    const std::size_t step = std::max<std::size_t>(1, n / max_points);
    for (std::size_t i = 0; i < n; ++i) {
      // The last row at each latency: the fraction done within it.
      if (i + 1 < n && done[i + 1] == done[i]) continue;
      if (i + 1 < n && i < n / 2 && i % step != 0) continue;
      c.data += fmt::format("{} {}\n", num(done[i]),
                            num(static_cast<double>(i + 1) / static_cast<double>(n)));
      latencies.push_back(done[i]);
    }
    c.data += "\n\n";
    titles.push_back(s.name);
  }
  if (titles.empty() || !any_positive(latencies)) return;
  const bool log_x =
      spans(latencies, 100) && *std::min_element(latencies.begin(), latencies.end()) > 0;
  c.body = title_cmd(run.r.scenario + ": latency distribution (completed operations)",
                     "latency (" + run.unit + ")" + (log_x ? ", log scale" : ""),
                     "fraction done within") +
           (log_x ? "set logscale x\n" : "") + "set yrange [0:1.02]\nset key bottom right\n" +
           plot_blocks(titles, "using 1:2 with steps lw 2");
  out.push_back(std::move(c));
}

// Per operation (per client in seed 001's model), sorted by latency. Large runs are thinned to
// evenly spaced ranks: the curve keeps its shape and the SVG stays small.
void client_charts(const plain_run& run, const fs::path& clients_csv, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  const std::string& unit = run.unit;
  if (fs::exists(clients_csv)) {
    auto rows = read_clients(clients_csv);
    chart lat =
        make_chart("clients-latency", "Latency of each operation, operations sorted by latency");
    chart att =
        make_chart("clients-attempts", "Attempts of each operation, operations sorted by latency");
    std::vector<std::string> titles;
    std::vector<double> latencies;
    constexpr std::size_t max_points = 1500;
    for (const auto& s : r.strategies) {
      auto it = rows.find(s.name);
      if (it == rows.end() || it->second.empty()) continue;
      auto& v = it->second;
      std::stable_sort(v.begin(), v.end(), [](const client_row& a, const client_row& b) {
        return a.latency < b.latency;
      });
      const std::size_t n = v.size();
      const std::size_t k = std::min(n, max_points);
      for (std::size_t j = 0; j < k; ++j) {
        const std::size_t i = k == 1 ? 0 : j * (n - 1) / (k - 1);
        lat.data += fmt::format("{} {}\n", i + 1, num(v[i].latency));
        att.data += fmt::format("{} {}\n", i + 1, num(v[i].attempts));
        latencies.push_back(v[i].latency);
      }
      lat.data += "\n\n";
      att.data += "\n\n";
      titles.push_back(s.name);
    }
    if (!titles.empty()) {
      const std::string x = "operation, sorted by latency (rank)";
      lat.body =
          title_cmd(r.scenario + ": latency per operation, sorted", x, "latency (" + unit + ")") +
          (spans(latencies, 1000) ? "set logscale y\n" : "") +
          plot_blocks(titles, "using 1:2 with lines lw 2");
      att.body =
          title_cmd(r.scenario + ": attempts per operation, sorted by latency", x, "attempts") +
          plot_blocks(titles, "using 1:2 with points pt 7 ps 0.35");
      out.push_back(std::move(lat));
      out.push_back(std::move(att));
    }
    latency_cdf_chart(run, rows, out);
  }
}

// The server's view, one chart per strategy: five series for each of up to eight strategies
// would be unreadable on one chart.
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
    out.push_back(std::move(c));
  }
}

// The client window.
void window_chart(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  const std::string& time_label = run.time_label;
  chart c = make_chart("window", "Client window (AIMD cwnd and ssthresh) over time");
  std::vector<std::string> titles;
  double max_cwnd = 0, max_ss = 0;
  std::string plot = "plot ";
  std::size_t block = 0;
  for (const auto& s : r.strategies) {
    if (!s.has_window) continue;
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const auto& b = s.buckets[i];
      c.data += fmt::format("{} {} {}\n", num(static_cast<double>(i) * width), num(b.cwnd),
                            num(b.ssthresh));
      max_cwnd = std::max(max_cwnd, b.cwnd);
      if (std::isfinite(b.ssthresh)) max_ss = std::max(max_ss, b.ssthresh);
    }
    c.data += "\n\n";
    plot += fmt::format(
        "{}{} index {} using 1:2 with steps lw 2 lt {} title {}, '' index {} using 1:3 with "
        "steps lw 1 dt 2 lt {} title {}",
        block == 0 ? "" : ", \\\n  ", block == 0 ? "DATA" : "''", block, block + 1,
        gq(s.name + " cwnd"), block, block + 1, gq(s.name + " ssthresh"));
    ++block;
  }
  if (block > 0 && max_cwnd > 0) {
    // The initial ssthresh is often far above any window reached; it would flatten the cwnd.
    const std::string range = max_ss > 3 * max_cwnd
                                  ? fmt::format("set yrange [0:{}]\n", num(max_cwnd * 1.5))
                                  : std::string("set yrange [0:*]\n");
    c.body = title_cmd(r.scenario + ": client window", time_label, "requests in flight") + range +
             plot + "\n";
    out.push_back(std::move(c));
  }
}

// The outage as a grey band behind a time chart, when the model has one.
std::string outage_band(const scenario_result& r) {
  if (!r.outage_s) return {};
  return fmt::format(
      "set object 1 rectangle from {}, graph 0 to {}, graph 1 behind fillcolor rgb '#e8e8e8' "
      "fillstyle solid 1.0 noborder\n",
      num(r.outage_s->first), num(r.outage_s->second));
}

// Around an outage: goodput, and concurrency on a log scale (it spans 10 to 10^5).
void outage_charts(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
  const std::string& per = run.per;
  const std::string& time_label = run.time_label;
  const std::vector<std::string>& names = run.names;
  if (r.outage) {
    chart g = make_chart("goodput", "Goodput (successes " + per + ") around the outage");
    chart n = make_chart("concurrency",
                         "Concurrency at the server (requests in service) around the outage");
    std::vector<double> good, conc;
    for (const auto& s : r.strategies) {
      const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
      for (std::size_t i = 0; i < s.buckets.size(); ++i) {
        const auto& b = s.buckets[i];
        const double t = static_cast<double>(i) * width;
        const double rate = width > 0 ? static_cast<double>(b.successes) / width : 0;
        g.data += num(t) + ' ' + num(rate) + '\n';
        n.data += num(t) + ' ' + std::to_string(b.in_service) + '\n';
        good.push_back(rate);
        conc.push_back(static_cast<double>(b.in_service));
      }
      g.data += "\n\n";
      n.data += "\n\n";
    }
    g.body = title_cmd(r.scenario + ": goodput", time_label, "successes " + per) + outage_band(r) +
             "set yrange [0:*]\n" + plot_blocks(names, "using 1:2 with steps lw 1.5");
    n.body =
        title_cmd(r.scenario + ": concurrency (log scale)", time_label, "requests in service") +
        (any_positive(conc) ? "set logscale y\n" : "") +
        plot_blocks(names, "using 1:2 with steps lw 1.5");
    if (any_positive(good)) out.push_back(std::move(g));
    out.push_back(std::move(n));

    // Seed 004's own figures: each strategy's delay against the retry number, linear and log,
    // drawn from its policy with a fixed seed (as `backoff delays --plot` does). The model may
    // start the growth elsewhere (its `quirks`); this shows the policy itself.
    chart d = make_chart("delays", "Each strategy's backoff policy: delay before retry n");
    std::vector<std::string> titles;
    std::vector<double> values;
    for (const auto& [name, policy] : r.policies) {
      int retry = 0;
      for_each_delay(policy, 1, 12, [&](duration delay) {
        const double wait = to_seconds(delay);
        d.data += std::to_string(++retry) + ' ' + num(wait) + '\n';
        values.push_back(wait);
      });
      d.data += "\n\n";
      titles.push_back(name);
    }
    if (!titles.empty()) {
      d.body = title_cmd(r.scenario + ": delay before each retry", "retry number (after failure n)",
                         "delay (s)") +
               plot_blocks(titles, "using 1:2 with linespoints lw 1.5 pt 7 ps 0.6");
      add_linear_and_log(out, std::move(d), values);
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
  std::vector<double> values;
  for (const auto& s : r.strategies) {
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const double v = width > 0 ? s.buckets[i].work / width : 0;
      c.data += num(static_cast<double>(i) * width) + ' ' + num(v) + '\n';
      values.push_back(v);
    }
    c.data += "\n\n";
  }
  if (!any_positive(values)) return;
  c.body = title_cmd(r.scenario + ": server work", run.time_label, label) + outage_band(r) +
           "set yrange [0:*]\n" + plot_blocks(run.names, "using 1:2 with steps lw 1.5");
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
// the half-width of its 95 % confidence interval. None when nothing positive is to be drawn.
std::optional<chart> sweep_metric_chart(const scenario_result& r, const sweep_lines& l,
                                        const metric& m) {
  const bool ci = r.replications > 1;
  const std::string of = ci ? fmt::format(" (mean of {} runs, 95 % CI)", r.replications) : "";
  chart c =
      make_chart("sweep-" + slug(m.field), fmt::format("{} against {}{}", m.title, l.key, of));
  std::vector<double> values;
  std::vector<std::string> titles;
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
      values.push_back(mc.mean);
    }
    if (block.empty()) continue;
    c.data += block + "\n\n";
    titles.push_back(l.names[i]);
  }
  if (titles.empty() || !any_positive(values)) return std::nullopt;
  std::string body = title_cmd(r.scenario + ": " + m.title + " vs " + l.key, l.x_label, m.label);
  if (m.percent) {
    body += "set yrange [0:105]\n";
  } else if (spans(values, 100)) {
    body += "set logscale y\n";
  } else {
    body += "set yrange [0:*]\n";
  }
  if (!l.numeric_x) {
    std::string tics = "set xtics (";
    for (std::size_t i = 0; i < l.categories.size(); ++i) {
      tics += fmt::format("{}{} {}", i == 0 ? "" : ", ", gq(l.categories[i]), i);
    }
    body +=
        tics + ")\nset xrange [-0.5:" + num(static_cast<double>(l.categories.size()) - 0.5) + "]\n";
  } else {
    body += "set offsets graph 0.02, graph 0.02, 0, 0\n";
  }
  body += plot_blocks(titles, ci && !m.percent ? "using 1:2:3 with yerrorlines lw 1.5 pt 7 ps 0.6"
                                               : "using 1:2 with linespoints lw 1.5 pt 7 ps 0.6");
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

// ---- the report -----------------------------------------------------------------------------

void write_report(const scenario_result& r, output_folder& folder, const report_inputs& inputs,
                  const std::vector<chart>& charts) {
  std::string h;
  const std::string name = html_escape(r.scenario);
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>backoff sim: " + name + "</title>\n";
  h += R"(<style>
body { font-family: "DejaVu Sans", sans-serif; margin: 1.5em auto; max-width: 1000px; color: #222; }
h1 { margin-bottom: 0.2em; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.facts dt { font-weight: bold; }
dl.facts dd { margin: 0; }
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
  h += "<h1>" + name + "</h1>\n<dl class=\"facts\">\n";
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
  } else {
    fact("strategies", std::to_string(r.strategies.size()));
  }
  fact("events", std::to_string(r.events));
  std::string sets;
  for (const auto& s : inputs.sets) sets += (sets.empty() ? "" : ", ") + s;
  if (!sets.empty()) fact("overrides (--set)", sets);
  h += "</dl>\n";

  h += "<nav>";
  h += "<a href=\"#table\">comparison table</a>";
  for (const auto& c : charts) {
    h += "<a href=\"#" + html_escape(c.name) + "\">" + html_escape(c.name) + "</a>";
  }
  if (!inputs.scenario_toml.empty()) h += "<a href=\"#parameters\">parameters</a>";
  h += "</nav>\n";

  h += "<h2 id=\"table\">Comparison</h2>\n<pre>" + html_escape(comparison_table(r)) + "</pre>\n";
  h += "<h2>Charts</h2>\n";
  for (const auto& c : charts) {
    // SVG, not PNG: it is the same bytes with the same gnuplot and scales on any screen.
    const std::string svg = read_whole_file(folder.dir() / (c.name + ".svg"));
    h += "<figure id=\"" + html_escape(c.name) + "\">\n<img class=\"chart\" alt=\"" +
         html_escape(c.caption) + "\" width=\"" + std::to_string(c.width) + "\" height=\"" +
         std::to_string(c.height) + "\" src=\"data:image/svg+xml;base64," + base64(svg) +
         "\">\n<figcaption>" + html_escape(c.caption) + " (" + html_escape(c.name) + ".png, " +
         html_escape(c.name) + ".svg)</figcaption>\n</figure>\n";
  }
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

void write_report_index(output_folder& folder, const std::vector<report_link>& links) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<title>backoff sim: reports</title></head>\n<body>\n<h1>backoff sim: reports</h1>\n"
         "<ul>\n";
  for (const auto& link : links) {
    out << "<li><a href=\"" << html_escape(link.href) << "\">" << html_escape(link.scenario)
        << "</a> (model " << html_escape(link.model) << ", seed " << link.seed << ")</li>\n";
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
  std::vector<chart> charts;
  add_linear_and_log(charts, std::move(c), values);
  if (charts.size() == 1) {
    // No positive delay: a log scale cannot show it, but the files are promised; draw linear.
    chart copy = charts.front();
    copy.name += "-log";
    charts.push_back(std::move(copy));
  }
  draw(charts, dir, options);
}

}  // namespace backoff::report
