// SPDX-License-Identifier: Apache-2.0
#include "chart_choice.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace backoff::report::plotting {
namespace {

void plain_charts(const scenario_result& r, const std::filesystem::path& dir,
                  std::vector<chart>& out) {
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
  service_charts(run, out);
  window_chart(run, out);
  outage_charts(run, out);
  work_chart(run, out);
  field_charts(run, out);
}

}  // namespace

std::vector<chart> charts_of(const scenario_result& r, const std::filesystem::path& dir) {
  std::vector<chart> charts;
  phase_charts(r, charts);
  if (r.sweep) {
    sweep_charts(r, charts);
  } else {
    plain_charts(r, dir, charts);
  }
  return charts;
}

std::vector<chart> delay_charts(const std::vector<std::vector<double>>& delays,
                                const std::string& policy, const std::string& name) {
  chart c = make_chart(name, "Delay before each retry");
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
  return {std::move(c), std::move(log)};
}

}  // namespace backoff::report::plotting
