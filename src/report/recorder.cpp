// SPDX-License-Identifier: Apache-2.0
#include "recorder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "clients_csv.hpp"
#include "csv.hpp"

namespace backoff::report {
namespace {

// A clients.csv row after its strategy: id, first_attempt_s, done_s, attempts, latency_s and
// status, the rest of clients_csv_columns in their order (tests/report/recorder_test.cpp reads a
// row back by the columns' names).
constexpr std::string_view clients_row_rest = ",{},{},{},{},{},{}\n";

constexpr std::size_t fields_in(std::string_view format) {
  std::size_t n = 0;
  for (std::size_t at = format.find("{}"); at != std::string_view::npos;
       at = format.find("{}", at + 2)) {
    ++n;
  }
  return n;
}
static_assert(1 + fields_in(clients_row_rest) == clients_csv_columns.size(),
              "a clients.csv row has one field per column of clients_csv.hpp");

}  // namespace

recorder::recorder(recorder_options options, std::ostream* clients_csv)
    : options_(std::move(options)),
      clients_(clients_csv),
      latency_(options_.latency.highest, options_.latency.precision) {}

series_bucket& recorder::advance(time_units t) {
  const auto i = static_cast<std::size_t>(std::max<time_units>(t, 0) / options_.bucket);
  current_ = i;
  current_start_ = static_cast<time_units>(i) * options_.bucket;
  current_end_ = current_start_ + options_.bucket;
  if (i >= buckets_.size()) {
    series_bucket carried;
    carried.in_service = load_now_;
    carried.queued = queued_now_;
    carried.cwnd = cwnd_now_;
    carried.ssthresh = ssthresh_now_;
    buckets_.resize(i + 1, carried);
  }
  return buckets_[i];
}

void recorder::load(time_units t, std::int64_t in_service, std::int64_t queued) {
  load_area_ += static_cast<double>(load_now_) * static_cast<double>(t - load_since_);
  load_since_ = t;
  load_now_ = in_service;
  queued_now_ = queued;
  peak_load_ = std::max(peak_load_, in_service);
  series_bucket& b = at(t);
  b.in_service = in_service;
  b.queued = queued;
}

void recorder::window(time_units t, double cwnd, double ssthresh) {
  has_window_ = true;
  cwnd_now_ = cwnd;
  ssthresh_now_ = ssthresh;
  series_bucket& b = at(t);
  b.cwnd = cwnd;
  b.ssthresh = ssthresh;
}

void recorder::field(std::string_view name, std::optional<double> value) {
  for (auto& f : fields_) {
    if (f.name == name) {
      f.value = value;
      return;
    }
  }
  fields_.push_back({std::string(name), value});
}

void recorder::operation_done(const op_record& r) {
  const char* status = "completed";
  switch (r.status) {
    case op_status::completed:
      ++completed_;
      if (options_.latency.from_operations) latency_.record(r.done - r.first_attempt);
      if (r.done >= last_completion_) {
        last_completion_ = r.done;
        area_at_last_completion_ =
            load_area_ + static_cast<double>(load_now_) * static_cast<double>(r.done - load_since_);
      }
      break;
    case op_status::failed:
      ++gave_up_;
      status = "failed";
      if (options_.fallback && options_.fallback->contains(r.why)) {
        ++fell_back_;
        status = "fell_back";
      }
      break;
    case op_status::unfinished:
      ++unfinished_;
      status = "unfinished";
      break;
  }
  if (clients_ != nullptr) {
    const double s = options_.seconds_per_unit;
    row_.clear();
    csv_append(row_, options_.strategy);
    fmt::format_to(std::back_inserter(row_), clients_row_rest, r.id,
                   static_cast<double>(r.first_attempt) * s, static_cast<double>(r.done) * s,
                   r.attempts, static_cast<double>(r.done - r.first_attempt) * s, status);
    *clients_ << row_;
  }
}

strategy_summary recorder::finish(time_units end, std::uint64_t events) {
  // The series covers the whole run, [0, end): no empty bucket starting at `end` (unless an
  // event fell exactly there).
  if (end > 0) (void)at(end - 1);
  const double s = options_.seconds_per_unit;
  strategy_summary out;
  out.name = options_.strategy;
  out.operations = operations_;
  out.completed = completed_;
  out.gave_up = gave_up_;
  out.unfinished = unfinished_;
  out.attempts = attempts_;
  out.attempts_per_operation =
      operations_ == 0 ? 0.0 : static_cast<double>(attempts_) / static_cast<double>(operations_);
  out.makespan_s = static_cast<double>(last_completion_) * s;
  if (latency_.count() > 0) {
    const latency_histogram_options& l = options_.latency;
    const auto p = latency_.quantiles({0.50, 0.75, 0.90, 0.95, 0.99, 0.999, 0.9999}, l.rule);
    const double unit = l.seconds_per_unit > 0 ? l.seconds_per_unit : s;
    const auto sec = [&](std::int64_t v) { return static_cast<double>(v) * unit; };
    const std::int64_t max =
        l.rule == quantile_rule::bucket_middle ? latency_.max_recorded() : latency_.max();
    out.latency_s = latency_summary{sec(p[0]), sec(p[1]), sec(p[2]), sec(p[3]),
                                    sec(p[4]), sec(p[5]), sec(p[6]), sec(max)};
  }
  out.goodput_per_s = out.makespan_s > 0 ? static_cast<double>(completed_) / out.makespan_s : 0.0;
  out.peak_load = peak_load_;
  out.mean_load =
      last_completion_ > 0 ? area_at_last_completion_ / static_cast<double>(last_completion_) : 0.0;
  out.events = events;
  out.has_window = has_window_;
  out.seconds_per_unit = s;
  out.bucket_width = options_.bucket;
  out.recovery_s = recovery(end);
  if (options_.phase_goodput && options_.outage) {
    const auto [down, up] = *options_.outage;
    const auto rate = [&](std::uint64_t n, time_units from, time_units to) {
      return to > from ? static_cast<double>(n) / (static_cast<double>(to - from) * s) : 0.0;
    };
    out.phases = phase_goodput{rate(phase_successes_[0], 0, std::min(down, end)),
                               rate(phase_successes_[1], std::min(down, end), std::min(up, end)),
                               rate(phase_successes_[2], std::min(up, end), end)};
  }
  if (options_.fallback) {
    const auto share = [&](std::uint64_t n) -> std::optional<double> {
      if (operations_ == 0) return std::nullopt;
      return static_cast<double>(n) / static_cast<double>(operations_);
    };
    fields_.push_back({std::string(fell_back_rate_field), share(fell_back_)});
    fields_.push_back({std::string(answered_rate_field), share(completed_ + fell_back_)});
  }
  std::size_t series_length = buckets_.size();
  for (const service_series& one : services_) {
    series_length = std::max(series_length, one.buckets.size());
  }
  for (service_series& one : services_) one.buckets.resize(series_length);
  out.buckets = std::move(buckets_);
  out.services = std::move(services_);
  out.fields = std::move(fields_);
  out.work_label = std::move(work_label_);
  return out;
}

std::optional<double> recorder::recovery(time_units end) const {
  if (!options_.outage) return std::nullopt;
  const time_units w = options_.bucket;
  const auto [down, up] = *options_.outage;
  // The baseline: whole buckets inside [down - baseline, down).
  const time_units from = std::max<time_units>(0, down - options_.baseline);
  const std::size_t first = static_cast<std::size_t>((from + w - 1) / w);
  const std::size_t last = static_cast<std::size_t>(down / w);  // exclusive
  if (last <= first || last > buckets_.size()) return std::nullopt;
  double sum = 0;
  for (std::size_t i = first; i < last; ++i) sum += static_cast<double>(buckets_[i].successes);
  const double baseline = sum / static_cast<double>(last - first);
  if (baseline <= 0) return std::nullopt;  // nothing to recover to
  const double threshold = options_.recovery_fraction * baseline;
  const auto hold = static_cast<std::size_t>((options_.recovery_hold + w - 1) / w);
  const std::size_t complete = static_cast<std::size_t>(end / w);  // buckets that ended by `end`
  std::size_t run = 0;
  for (std::size_t i = static_cast<std::size_t>((up + w - 1) / w);
       i < std::min(complete, buckets_.size()); ++i) {
    run = static_cast<double>(buckets_[i].successes) >= threshold ? run + 1 : 0;
    if (run == hold) {
      const time_units recovered = static_cast<time_units>(i + 1 - hold) * w;
      return static_cast<double>(recovered - up) * options_.seconds_per_unit;
    }
  }
  return std::nullopt;
}

}  // namespace backoff::report
