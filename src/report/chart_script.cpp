// SPDX-License-Identifier: Apache-2.0
#include "chart_script.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "backoff/error.hpp"
#include "output_files.hpp"

namespace backoff::report::plotting {
namespace fs = std::filesystem;

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

namespace {

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

}  // namespace

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

std::string labels_cmd(std::string_view x, std::string_view y) {
  return fmt::format("set xlabel {}\nset ylabel {}\n", gq(x), gq(y));
}

std::string plot_blocks(const std::vector<std::string>& titles, std::string_view using_style,
                        std::string_view extra) {
  std::string cmd = "plot ";
  for (std::size_t i = 0; i < titles.size(); ++i) {
    cmd += fmt::format("{}{} index {} {} title {}{}", i == 0 ? "" : ", \\\n  ",
                       i == 0 ? "DATA" : "''", i, using_style, gq(titles[i]), extra);
  }
  return cmd + "\n";
}

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

std::pair<std::size_t, std::size_t> panel_grid(std::size_t n) {
  const std::size_t columns = n <= 4 ? std::min<std::size_t>(n, 2) : (n <= 8 ? 2 : 3);
  return {(n + columns - 1) / columns, columns};
}

int panels_height(std::size_t rows, std::size_t columns) {
  return static_cast<int>(60 + rows * (columns == 3 ? 200 : 220));
}

void plot_series(chart& c, const std::string& title, const std::vector<std::string>& titles,
                 std::string_view style, const series_axes& axes) {
  c.body += x_range(axes) + y_range(axes);
  if (titles.size() <= max_overplotted) {
    c.body += "set title " + gq(title) + "\n" + plot_blocks(titles, style);
    return;
  }
  const auto [rows, columns] = panel_grid(titles.size());
  c.height = panels_height(rows, columns);
  c.body += panel_tics(axes, !axes.log_x);
  c.body += fmt::format("unset key\nset multiplot layout {},{} title {}\n", rows, columns,
                        gq(title + " (one panel per strategy, shared axes)"));
  for (std::size_t i = 0; i < titles.size(); ++i) {
    c.body += fmt::format("set title {}\nplot DATA index {} {} lt {} notitle\n", gq(titles[i]), i,
                          style, i + 1);
  }
  c.body += "unset multiplot\n";
}

void add_linear_and_log(std::vector<chart>& out, const std::function<chart(bool)>& make,
                        bool can_log) {
  out.push_back(make(false));
  if (can_log) out.push_back(make(true));
}

}  // namespace backoff::report::plotting
