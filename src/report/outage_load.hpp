// SPDX-License-Identifier: Apache-2.0
// What an outage does to a server's load and to its clients (SPEC 7.3, outage-amplification):
// the server's work per phase as a multiple of the base load (load_amplification {pre, peak,
// outage_mean, after}) and the share of operations that succeed among those ending in each phase
// (success_by_phase {outage, after}). One tally both the dedicated model and the system model
// fill, so that the two forms of the scenario compute the same figures the same way.
//
//   outage_load tally({.warmup = 100ms, .outage = {500ms, 1s}, .end = 1500ms,
//                      .bucket = 20ms, .base_per_s = 5000});
//   tally.work(t);            // each request the server finished, failed or not
//   tally.ended(t, ok);       // each operation, when it ends
//   tally.report(recorder);   // the fields, before recorder::finish
#pragma once

#include <cstdint>
#include <vector>

#include "recorder.hpp"

namespace backoff::report {

struct outage_phases {
  time_units warmup = 0;  // pre counts from here to the outage's start
  outage_window outage;
  time_units end = 0;     // after ends here; later work and endings count nowhere
  time_units bucket = 1;  // the points peak is read on
  double base_per_s = 1;  // the load 1.0 stands for: requests a second
  double seconds_per_unit = 1e-9;
};

class outage_load {
 public:
  explicit outage_load(outage_phases phases);

  void work(time_units t);
  void ended(time_units t, bool ok);
  // load_amplification.{pre, peak, outage_mean, after} and success_by_phase.{outage, after}.
  void report(recorder& out) const;

 private:
  enum phase : int { before, pre, during, after, past };
  phase phase_of(time_units t) const;

  outage_phases p_;
  std::vector<std::uint64_t> per_bucket_;  // work finished in each whole bucket before `end`
  std::uint64_t work_[4] = {};
  std::uint64_t ended_[4] = {}, succeeded_[4] = {};
};

}  // namespace backoff::report
