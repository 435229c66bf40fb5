// SPDX-License-Identifier: Apache-2.0
// The gnuplot side of the charts (plots.hpp), internal to the report layer: a chart as its data
// blocks and the commands that draw it; the quoting that keeps names from a scenario file inside
// gnuplot strings; axes (ranges, log scales, tics) and small multiples; and drawing a list of
// charts as PNG and SVG through gnuplot.hpp. The chart families (chart_choice.hpp) build their
// charts with these pieces.
//
//   plotting::chart c = plotting::make_chart("rate", "Request rate over time");
//   plotting::series_axes axes;
//   c.data = "0 1\n1 3\n\n\n";  // one data block per series
//   axes.data.add(0, 1);
//   axes.data.add(1, 3);
//   c.body = plotting::labels_cmd("time (s)", "attempts per second");
//   plotting::plot_series(c, "run: request rate", {"EB"}, "using 1:2 with steps", axes);
//   plotting::draw({c}, dir, options);  // dir/rate.png and dir/rate.svg
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gnuplot.hpp"

namespace backoff::report::plotting {

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

chart make_chart(std::string name, std::string caption);

// Draws every chart as PNG and SVG into `dir` (plot_error when gnuplot fails or writes nothing).
void draw(const std::vector<chart>& charts, const std::filesystem::path& dir,
          const plot_options& options);

// ---- text in scripts and data files

// A gnuplot single-quoted string: the only kind a name from the user's input may reach.
std::string gq(std::string_view s);
// A field of a gnuplot data file, double-quoted so that a name with spaces stays one column.
std::string dq(std::string_view s);
// A number as gnuplot reads it; "NaN" (missing data) when not finite.
std::string num(double v);
// A file-name part made of a name: lower case letters, digits, '.', '_' and '-'.
std::string slug(std::string_view s);

// ---- commands

std::string title_cmd(std::string_view title, std::string_view x, std::string_view y);
// Axis labels alone, for a chart whose title plot_series sets.
std::string labels_cmd(std::string_view x, std::string_view y);
// `plot DATA index 0 using ... title 'a', '' index 1 ...`: one clause per data block.
std::string plot_blocks(const std::vector<std::string>& titles, std::string_view using_style,
                        std::string_view extra = {});
// The style of a bar chart with one cluster of bars per strategy (names as x tics).
inline constexpr const char* clustered_bars_cmd =
    "set style data histograms\nset style histogram clustered gap 1\n"
    "set style fill solid 0.85 border -1\nset xtics rotate by -20 nomirror\n";

// ---- axes

// Log scale when the positive values span more than `ratio`; never when there are none.
bool spans(const std::vector<double>& values, double ratio);
bool any_positive(const std::vector<double>& values);

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

// The y range of a chart: explicit, so that every panel of a small-multiples chart shares it.
std::string y_range(const series_axes& a);
// The x range: the explicit one, else the data's (none when the data has no width).
std::string x_range(const series_axes& a);

// ---- small multiples

// More series than this on one chart and they become one small panel each (eight overplotted
// lines cannot be told apart).
constexpr std::size_t max_overplotted = 4;

// Fewer tics and only horizontal grid lines in small panels: each tic and grid line is about a
// kilobyte of SVG, and a dozen per panel on nine panels would weigh more than the data.
std::string panel_tics(const series_axes& a, bool linear_x);

// The panel grid of a small-multiples chart of n panels: {rows, columns}.
std::pair<std::size_t, std::size_t> panel_grid(std::size_t n);
// The height of a chart with that grid of panels.
int panels_height(std::size_t rows, std::size_t columns);

// Plots the data blocks 0..titles.size()-1 of `c` with `style`: on one chart with a key when
// there are few, else as small multiples (gnuplot multiplot), one panel per series titled with
// its name, every panel on the same axes and in its series' colour. `title` is the chart's.
void plot_series(chart& c, const std::string& title, const std::vector<std::string>& titles,
                 std::string_view style, const series_axes& axes);

// Linear and log-y variants of one chart (make(false), make(true)); the log one only when
// there is something positive to draw on it.
void add_linear_and_log(std::vector<chart>& out, const std::function<chart(bool)>& make,
                        bool can_log);

}  // namespace backoff::report::plotting
