// SPDX-License-Identifier: Apache-2.0
// A plain run's charts over time (chart_choice.hpp): request rate, the server's view, the client
// window, goodput and concurrency around an outage with each policy's delays, and server work.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "chart_choice.hpp"

namespace backoff::report::plotting {

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

namespace {

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
  c.height = panels_height(rows, columns);
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

// The outage as a grey band behind a time chart, when the model has one.
std::string outage_band(const scenario_result& r) {
  if (!r.outage_s) return {};
  return fmt::format(
      "set object 1 rectangle from {}, graph 0 to {}, graph 1 behind fillcolor rgb '#e8e8e8' "
      "fillstyle solid 1.0 noborder\n",
      num(r.outage_s->first), num(r.outage_s->second));
}

// Each strategy's delay against the retry number, linear and log, drawn from its policy with a
// fixed seed (as `backoff delays --plot` does). The model may start the growth elsewhere (its
// `quirks`); this shows the policy itself.
void policy_delay_charts(const plain_run& run, std::vector<chart>& out) {
  const scenario_result& r = run.r;
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
  if (titles.empty()) return;
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
    plot_series(d, r.scenario + ": delay before each retry" + (log ? " (log scale)" : ""), titles,
                "using 1:2 with linespoints lw 1.5 pt 7 ps 0.6", a);
    return d;
  };
  add_linear_and_log(out, make, delays.data.has_positive());
}

}  // namespace

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

// Around an outage: goodput, and concurrency on a log scale (it spans 10 to 10^5), the outage
// shaded in every panel; then each policy's delays.
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

    policy_delay_charts(run, out);
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

}  // namespace backoff::report::plotting
