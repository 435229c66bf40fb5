// SPDX-License-Identifier: Apache-2.0
// What one simulated run of one strategy measured. Models report events as they happen
// (operation started, attempt sent, success, error, timeout, server load, client window); the
// recorder keeps per-bucket time series, a latency histogram and running totals, and streams one
// row per finished operation to clients.csv. Its memory grows with the run's duration (buckets),
// not with the number of operations, so a million-client run costs no more than a thousand.
//
//   report::recorder rec{{.strategy = "EB", .bucket = 10, .seconds_per_unit = 1.0}, &clients_csv};
//   rec.operation_started(t);  rec.attempt(t);  rec.error(t);  ...
//   rec.operation_done({.id = 7, .first_attempt = 12, .done = 40, .attempts = 3,
//                       .status = report::op_status::completed});
//   rec.operation_done({.id = 8, ..., .status = report::status_of(why), .why = why});  // failed
//   report::strategy_summary s = rec.finish(end_time);
//
// Times are in the model's units (ns, or ticks for tick models); seconds_per_unit converts them
// for outputs (1e-9, or 1 for ticks: "in tick models, fields ending in _s are in ticks").
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backoff/fallback.hpp"
#include "backoff/outcome.hpp"
#include "hdr_histogram.hpp"
#include "result.hpp"

namespace backoff::report {

enum class op_status : std::uint8_t { completed, failed, unfinished };

// An operation that ended on its own: completed when it succeeded, else failed.
constexpr op_status status_of(outcome why) noexcept {
  return why == outcome::succeeded ? op_status::completed : op_status::failed;
}

struct op_record {
  std::uint64_t id;
  time_units first_attempt;
  time_units done;  // completion or failure time; the run's end for unfinished operations
  std::uint32_t attempts;
  op_status status;
  outcome why = outcome::succeeded;  // how a failed one ended (its retry loop's outcome)
};

// The latency histogram of a recorder: its precision, range and unit, and how its percentiles
// are read. The default is the simulator's: 12 sub-bucket bits in model units (relative error
// below 0.025 %, exact below 4096 units), the middle of a percentile's bucket.
struct latency_histogram_options {
  hdr_precision precision = hdr_precision::sub_bucket_bits(12);
  std::int64_t highest = std::numeric_limits<std::int64_t>::max();
  double seconds_per_unit = 0;  // 0: the recorder's seconds_per_unit
  quantile_rule rule = quantile_rule::bucket_middle;
  // false: operation_done records no latency; the driver adds its own histograms
  // (recorder::add_latencies), in this precision and unit.
  bool from_operations = true;
};

struct recorder_options {
  std::string strategy;
  time_units bucket = 1'000'000'000;  // timeseries bucket width, in model units
  double seconds_per_unit = 1e-9;
  // With an outage, finish() computes recovery_s (SPEC 6.2): the time from the outage's end
  // until goodput (successes per bucket) stays at or above `recovery_fraction` of its level over
  // the `baseline` before the outage, for `recovery_hold`; null if it never does.
  std::optional<outage_window> outage;
  time_units baseline = 30'000'000'000;
  time_units recovery_hold = 5'000'000'000;
  double recovery_fraction = 0.9;
  // With an outage, finish() also reports goodput before, during and after it (phases).
  bool phase_goodput = false;
  latency_histogram_options latency;
  // The strategy's fallback: a failed operation whose outcome it answers for is counted as
  // answered by it ("fell_back" in clients.csv), and finish() reports fell_back_rate and
  // answered_rate (successes and fallbacks) as fields. It stays a failure in success_rate.
  std::optional<fallback_outcomes> fallback;
};

// The fields finish() adds for a strategy with a fallback: the share of operations the fallback
// answered, and of those answered at all (succeeded or fell back).
inline constexpr std::string_view fell_back_rate_field = "fell_back_rate";
inline constexpr std::string_view answered_rate_field = "answered_rate";

class recorder {
 public:
  // clients_csv may be null (no --out); rows have clients_csv.hpp's columns.
  recorder(recorder_options options, std::ostream* clients_csv);

  void operation_started(time_units t) {
    at(t).new_operations++;
    ++operations_;
  }
  void attempt(time_units t) {
    at(t).attempts++;
    ++attempts_;
  }
  void success(time_units t) {
    at(t).successes++;
    if (options_.phase_goodput) count_phase(t);
  }
  void error(time_units t) { at(t).errors++; }
  void timeout(time_units t) { at(t).timeouts++; }
  // The server's load changed: requests in service and waiting.
  void load(time_units t, std::int64_t in_service, std::int64_t queued);
  void window(time_units t, double cwnd, double ssthresh);
  void operation_done(const op_record& r);
  // Server work at t (the model's unit: requests served, service seconds, multiples of a base
  // load), summed per bucket; the work chart shows it per second under `label`.
  void work(time_units t, double amount) { at(t).work += amount; }
  void work_label(std::string label) { work_label_ = std::move(label); }
  // A figure of the model's own (result.hpp's model_field), reported once per run, before
  // finish(); a name given twice keeps the last value.
  void field(std::string_view name, std::optional<double> value);
  // A model with several services: each one's time series (bucket width: the recorder's),
  // handed once per run, before finish(), which pads them with empty buckets to the run's end.
  void services(std::vector<service_series> series) { services_ = std::move(series); }

  // Completed operations' latencies measured by the driver (latency.from_operations false):
  // added to the run's histogram, which must have the same precision and a range as wide.
  void add_latencies(const hdr_histogram& h) { latency_.add(h); }
  // The latencies behind finish()'s latency_s (still there after it).
  const hdr_histogram& latencies() const noexcept { return latency_; }

  strategy_summary finish(time_units end, std::uint64_t events);

 private:
  series_bucket& at(time_units t) {
    // Events come in time order, so the current bucket almost always matches.
    if (t >= current_start_ && t < current_end_) return buckets_[current_];
    return advance(t);
  }
  series_bucket& advance(time_units t);
  std::optional<double> recovery(time_units end) const;

  recorder_options options_;
  std::ostream* clients_;
  std::vector<series_bucket> buckets_;
  std::size_t current_ = 0;
  time_units current_start_ = 0, current_end_ = 0;  // empty until the first event
  hdr_histogram latency_;
  std::uint64_t operations_ = 0, completed_ = 0, gave_up_ = 0, unfinished_ = 0, attempts_ = 0;
  std::uint64_t fell_back_ = 0;
  time_units last_completion_ = 0;
  // Time-weighted load.
  std::int64_t load_now_ = 0, queued_now_ = 0, peak_load_ = 0;
  time_units load_since_ = 0;
  // double, not long double: x87 arithmetic was a tenth of a run's time, and 53 bits keep the
  // time-weighted sum exact to far below what the mean load is printed with.
  double load_area_ = 0;
  double area_at_last_completion_ = 0;
  bool has_window_ = false;
  double cwnd_now_ = 0, ssthresh_now_ = 0;
  std::string row_;
  std::vector<model_field> fields_;
  std::vector<service_series> services_;
  std::string work_label_;
  std::uint64_t phase_successes_[3] = {0, 0, 0};  // before, during, after the outage
  void count_phase(time_units t) {
    if (!options_.outage) return;
    ++phase_successes_[t < options_.outage->start ? 0 : t < options_.outage->end ? 1 : 2];
  }
};

}  // namespace backoff::report
