// SPDX-License-Identifier: Apache-2.0
#include "outage_load.hpp"

#include <algorithm>
#include <optional>

namespace backoff::report {

outage_load::outage_load(outage_phases phases)
    : p_(phases),
      per_bucket_(
          static_cast<std::size_t>(std::max<time_units>(0, (p_.end + p_.bucket - 1) / p_.bucket)),
          0) {}

outage_load::phase outage_load::phase_of(time_units t) const {
  if (t >= p_.end) return past;
  if (t >= p_.outage.end) return after;
  if (t >= p_.outage.start) return during;
  return t >= p_.warmup ? pre : before;
}

void outage_load::work(time_units t) {
  const phase p = phase_of(t);
  if (p == past) return;
  ++work_[p];
  if (t >= 0) ++per_bucket_[static_cast<std::size_t>(t / p_.bucket)];
}

// A call's result counts at the time it ends (the source's client uptime panel).
void outage_load::ended(time_units t, bool ok) {
  const phase p = phase_of(t);
  if (p == past) return;
  ++ended_[p];
  if (ok) ++succeeded_[p];
}

void outage_load::report(recorder& out) const {
  const auto per_base = [&](std::uint64_t n, time_units from,
                            time_units to) -> std::optional<double> {
    if (to <= from) return std::nullopt;
    return static_cast<double>(n) /
           (static_cast<double>(to - from) * p_.seconds_per_unit * p_.base_per_s);
  };
  out.field("load_amplification.pre", per_base(work_[pre], p_.warmup, p_.outage.start));
  double peak = 0;
  for (std::size_t b = 0; b < per_bucket_.size(); ++b) {
    const time_units from = static_cast<time_units>(b) * p_.bucket;
    const time_units to = std::min(from + p_.bucket, p_.end);
    if (to - from < p_.bucket) break;  // a partial last bucket would read low
    peak =
        std::max(peak, static_cast<double>(per_bucket_[b]) /
                           (static_cast<double>(p_.bucket) * p_.seconds_per_unit * p_.base_per_s));
  }
  out.field("load_amplification.peak", peak);
  out.field("load_amplification.outage_mean",
            per_base(work_[during], p_.outage.start, p_.outage.end));
  out.field("load_amplification.after", per_base(work_[after], p_.outage.end, p_.end));
  const auto ratio = [&](phase p) -> std::optional<double> {
    if (ended_[p] == 0) return std::nullopt;
    return static_cast<double>(succeeded_[p]) / static_cast<double>(ended_[p]);
  };
  out.field("success_by_phase.outage", ratio(during));
  out.field("success_by_phase.after", ratio(after));
}

}  // namespace backoff::report
