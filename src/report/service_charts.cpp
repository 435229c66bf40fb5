// SPDX-License-Identifier: Apache-2.0
// A plain run's charts per service (chart_choice.hpp), for a model with several services
// (strategy_summary::services, model = "system"): each service's request rate, and its queue and
// rejections, one line per strategy. Service names come from the scenario file: they reach
// gnuplot only through gq() and file names only through slug().
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "chart_choice.hpp"

namespace backoff::report::plotting {
namespace {

// The names of the services the run's strategies report, in the model's order.
std::vector<std::string> charted_service_names(const scenario_result& r) {
  std::vector<std::string> names;
  for (const auto& s : r.strategies) {
    for (const service_series& series : s.services) {
      if (std::find(names.begin(), names.end(), series.service) == names.end()) {
        names.push_back(series.service);
      }
    }
  }
  return names;
}

// One service's series in each strategy that has it, with the strategy's name.
struct service_lines {
  std::vector<const strategy_summary*> strategies;
  std::vector<const service_series*> series;
  std::vector<std::string> titles;
};

service_lines lines_of(const scenario_result& r, const std::string& service) {
  service_lines lines;
  for (const auto& s : r.strategies) {
    for (const service_series& series : s.services) {
      if (series.service != service) continue;
      lines.strategies.push_back(&s);
      lines.series.push_back(&series);
      lines.titles.push_back(s.name);
    }
  }
  return lines;
}

// Calls row(t, width, bucket) for each bucket of each line, t and width in the run's unit, and
// ends each line's data block in `c`.
template <typename Row>
void each_bucket(const service_lines& lines, chart& c, Row row) {
  for (std::size_t k = 0; k < lines.series.size(); ++k) {
    const strategy_summary& s = *lines.strategies[k];
    const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
    const auto& buckets = lines.series[k]->buckets;
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      row(static_cast<double>(i) * width, width, buckets[i]);
    }
    c.data += "\n\n";
  }
}

// Each chart is some 60 kB of SVG: past this many services, the queue charts stay on disk (listed
// by the report) so that the page stays under 1 MB with the requests chart of every service.
constexpr std::size_t max_embedded_queue_charts = 3;

// A file name no other chart of the run has (service names may differ in case only).
std::string unused_chart_name(std::string name, std::vector<std::string>& used) {
  while (std::find(used.begin(), used.end(), name) != used.end()) name += "-2";
  used.push_back(name);
  return name;
}

// Attempts per second at the service, one line (or panel) per strategy.
void service_rate_chart(const plain_run& run, const std::string& service,
                        const service_lines& lines, const std::string& name,
                        const std::string& note, std::vector<chart>& out) {
  chart c = make_chart(name, "Requests " + run.per + " that reached " + service +
                                 " (attempts: first tries and retries)" + note);
  series_axes axes;
  each_bucket(lines, c, [&](double t, double width, const service_counts_bucket& b) {
    const double rate = width > 0 ? static_cast<double>(b.attempts) / width : 0;
    axes.data.add(t, rate);
    c.data += num(t) + ' ' + num(rate) + '\n';
  });
  if (!axes.data.has_positive()) return;
  c.body = labels_cmd(run.time_label, "attempts " + run.per);
  plot_series(c, service + ": requests " + run.per, lines.titles, "using 1:2 with steps lw 1.5",
              axes);
  out.push_back(std::move(c));
}

// The service's peak queue per bucket above its rejections per second: two panels on one time
// axis, one line per strategy in each.
void service_queue_chart(const plain_run& run, const std::string& service,
                         const service_lines& lines, const std::string& name, bool embed,
                         std::vector<chart>& out) {
  chart c = make_chart(name, "The most requests queued at " + service + " per bucket, and those " +
                                 "it rejected (refused, shed or dropped unserved) " + run.per);
  series_axes queue, rejected;
  each_bucket(lines, c, [&](double t, double width, const service_counts_bucket& b) {
    const double rate = width > 0 ? static_cast<double>(b.rejected) / width : 0;
    queue.data.add(t, static_cast<double>(b.peak_queue));
    rejected.data.add(t, rate);
    c.data += fmt::format("{} {} {}\n", num(t), b.peak_queue, num(rate));
  });
  if (!queue.data.has_positive() && !rejected.data.has_positive()) return;
  c.height = 700;
  c.embed = embed;
  // Top left: a brownout's queue builds later in the run, on the right.
  c.body = "set key inside top left font ',9'\n" + x_range(queue) +
           fmt::format("set multiplot layout 2,1 title {}\n",
                       gq(service + ": queue and rejections, one line per strategy")) +
           "set title 'peak queue (per bucket)'\n" +
           labels_cmd(run.time_label, "requests queued (peak)") + y_range(queue) +
           plot_blocks(lines.titles, "using 1:2 with steps lw 1.5") + "set title " +
           gq("rejected " + run.per) + "\n" + labels_cmd(run.time_label, "rejected " + run.per) +
           y_range(rejected) + plot_blocks(lines.titles, "using 1:3 with steps lw 1.5") +
           "unset multiplot\n";
  out.push_back(std::move(c));
}

}  // namespace

void service_charts(const plain_run& run, std::vector<chart>& out) {
  const std::vector<std::string> names = charted_service_names(run.r);
  if (names.empty()) return;
  const std::size_t charted = std::min(names.size(), max_charted_services);
  const std::string note =
      names.size() > charted
          ? fmt::format("; charts for the first {} of {} services, services.csv has every one",
                        charted, names.size())
          : "";
  std::vector<std::string> used;
  for (const auto& c : out) used.push_back(c.name);
  for (std::size_t i = 0; i < charted; ++i) {
    const service_lines lines = lines_of(run.r, names[i]);
    const std::string base = "service-" + slug(names[i]);
    service_rate_chart(run, names[i], lines, unused_chart_name(base, used), i == 0 ? note : "",
                       out);
    service_queue_chart(run, names[i], lines, unused_chart_name(base + "-queue", used),
                        charted <= max_embedded_queue_charts, out);
  }
}

}  // namespace backoff::report::plotting
