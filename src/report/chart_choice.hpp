// SPDX-License-Identifier: Apache-2.0
// Which charts a run's data supports (plots.hpp), internal to the report layer. charts_of puts
// them in report order: a metastable map's phase charts (phase_charts.cpp), then a sweep's
// metrics against its swept key (sweep_charts.cpp) or a plain run's charts: its time series
// (time_charts.cpp) and per service (service_charts.cpp), its per-strategy bars and
// per-operation charts (strategy_charts.cpp). Each family adds a chart only when there is
// something to draw on it.
//
//   std::vector<plotting::chart> charts = plotting::charts_of(result, dir);
//   plotting::draw(charts, dir, options);
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "chart_script.hpp"
#include "result.hpp"

namespace backoff::report::plotting {

// Every chart of `r`, in report order. `dir` holds the run's outputs (clients.csv is read from
// there when the run wrote it).
std::vector<chart> charts_of(const scenario_result& r, const std::filesystem::path& dir);

// `backoff delays --plot NAME`: delays[run][n], the wait after failure n + 1, against the retry
// number, one line per run: NAME (linear) and NAME-log (log y when a delay is positive).
std::vector<chart> delay_charts(const std::vector<std::vector<double>>& delays,
                                const std::string& policy, const std::string& name);

// A run whose time unit is the tick (seconds_per_unit 1) rather than the second.
inline bool is_ticks(double seconds_per_unit) {
  return seconds_per_unit == 1.0;
}

// ---- a plain run's charts

// What the charts of a plain run share: its result, the time unit and the strategies' names.
struct plain_run {
  const scenario_result& r;
  std::string unit, per, time_label;
  std::vector<std::string> names;
};

// Over time (time_charts.cpp): the request rate; the server's view; the client window when a
// strategy has one; goodput, concurrency and each policy's delays when the model has an outage;
// the server work the model reports.
void rate_chart(const plain_run& run, std::vector<chart>& out);
void server_charts(const plain_run& run, std::vector<chart>& out);
void window_chart(const plain_run& run, std::vector<chart>& out);
void outage_charts(const plain_run& run, std::vector<chart>& out);
void work_chart(const plain_run& run, std::vector<chart>& out);

// Per service, for a model with several services (service_charts.cpp): each service's requests
// per second (service-NAME) and its peak queue and rejections per second (service-NAME-queue),
// one line per strategy, for the first max_charted_services services (services.csv has all); the
// queue charts are embedded in the report only for up to three services.
inline constexpr std::size_t max_charted_services = 8;
void service_charts(const plain_run& run, std::vector<chart>& out);

// A system run for real beside its simulation (twin_charts.cpp): per strategy, the real and the
// simulated curve on one panel: goodput (twin-goodput), the clients' attempts (twin-attempts),
// the requests that reached each service (twin-service-NAME); and the HTML of the agreement
// table (the bounded figures of twin_comparison.hpp, each within its bound or not).
void twin_charts(const scenario_result& real, const scenario_result& simulated,
                 std::vector<chart>& out);
std::string twin_html(const scenario_result& real, const scenario_result& simulated);

// Per strategy (strategy_charts.cpp): latency percentiles and totals; per operation from
// clients.csv (sorted latency and attempts, the latency distribution); the model's own fields.
void summary_charts(const plain_run& run, std::vector<chart>& out);
void client_charts(const plain_run& run, const std::filesystem::path& clients_csv,
                   std::vector<chart>& out);
void field_charts(const plain_run& run, std::vector<chart>& out);

// ---- a sweep's charts (sweep_charts.cpp)

// Each metric (and each of the model's fields) against the first swept key.
void sweep_charts(const scenario_result& r, std::vector<chart>& out);

// ---- metastable maps (phase_charts.cpp), also read by the report's boundary table

// The maps of a result: its map_axes, or one per (model, mapped, strategy) of its boundary points
// when the producer gave none (their keys then unnamed).
std::vector<map_axes> maps_of(const scenario_result& r);
// The boundary points of one map, by load.
std::vector<const boundary_point*> points_of(const scenario_result& r, const map_axes& m);
// The maps of a result with points, grouped by mapped scenario and axes: the strategies that
// share a phase chart (and a comparison in the report), in map order.
std::vector<std::vector<map_axes>> phase_groups(const scenario_result& r);
// "key (unit)", or the key alone when it has no unit.
std::string axis_label(const std::string& key, const std::string& unit);
// One phase chart per mapped scenario (phase-MAPPED; phase-MAPPED-STRATEGY when it maps one
// strategy): where the system tips from recovering to staying down, each strategy's boundary.
void phase_charts(const scenario_result& r, std::vector<chart>& out);

}  // namespace backoff::report::plotting
