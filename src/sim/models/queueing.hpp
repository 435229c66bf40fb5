// SPDX-License-Identifier: Apache-2.0
// Validation models `mm1` and `mmc` (model type "queueing"): an M/M/c FIFO queue whose mean wait
// has a closed form, so the engine, the random streams and the statistics can be checked against
// theory. Poisson arrivals at rate_per_s; c identical servers; exponential service with mean
// mean_service; no retries (no attempt ever fails).
//
//   sim::queueing_params p{.rate_per_s = 80, .servers = 1,
//                          .mean_service = 10ms, .length = 4h, .warmup = 60s};
//   sim::queueing_estimate w = sim::simulate_queue(p, /*seed=*/1);
//   double theory = sim::mmc_mean_wait(80.0, 100.0, 1);     // 0.04 s
//   bool ok = std::abs(w.mean_wait_s - theory) <= w.ci95_half_width_s;
//
// The mean wait in queue Wq is estimated by the method of batch means (Law & Kelton, "Simulation
// Modeling and Analysis", 3rd ed., section 9.5.3): the waits of the customers that arrive after
// the warm-up, in arrival order (which is also service order: FIFO), are cut into
// `queueing_batches` = 20 consecutive batches of equal size; the estimate is the mean of the
// batch means, and the 95 % confidence interval's half-width is t(0.975, B - 1) * s / sqrt(B),
// s the standard deviation of the batch means. The batch size is fixed after the run: waits are
// summed in chunks of `queueing_chunk` = 64 customers, and the chunks are split evenly into the
// batches (floor(chunks / B) chunks each); the few chunks left over at the end of the run (fewer
// than B) and a last partial chunk are left out of the estimate.
#pragma once

#include <chrono>
#include <cstdint>

#include "backoff/duration.hpp"

namespace backoff::sim {

struct queueing_params {
  double rate_per_s = 80.0;                               // λ, arrivals per second
  std::int64_t servers = 1;                               // c
  duration mean_service = std::chrono::milliseconds{10};  // 1/μ
  duration length = std::chrono::hours{4};                // run.duration: measured after warm-up
  duration warmup = std::chrono::seconds{60};             // run.warmup: excluded from Wq
};

struct queueing_estimate {
  double mean_wait_s = 0;        // Wq, time from arrival to start of service
  double ci95_half_width_s = 0;  // infinity when fewer than 2 batches
  std::uint64_t customers = 0;   // waits in the estimate (batches * batch_size)
  std::uint32_t batches = 0;
  std::uint64_t batch_size = 0;
  std::uint64_t events = 0;  // engine.events_processed()
  double wall_s = 0;         // the run's wall time (engine and recorder)
};

inline constexpr std::uint32_t queueing_batches = 20;
inline constexpr std::uint64_t queueing_chunk = 64;

// Runs the model once (with a recorder that writes no files) and returns the Wq estimate.
// Throws std::invalid_argument on parameters the model rejects (rate or servers <= 0, ...).
queueing_estimate simulate_queue(const queueing_params& params, std::uint64_t seed);

// Erlang's C formula: the probability that an arrival waits in an M/M/c queue with offered load
// a = λ/μ (erlangs), a < c. Computed through the Erlang B recursion B(0) = 1,
// B(k) = a B(k-1) / (k + a B(k-1)), then C = B / (1 - (a/c)(1 - B)), which is numerically stable
// for any c; it equals the textbook form
//   C(c, a) = (a^c / c!) (c / (c - a)) / (sum_{k=0}^{c-1} a^k / k! + (a^c / c!) (c / (c - a)))
// (Kleinrock, "Queueing Systems, Volume 1: Theory", 1975, eq. 3.40; Gross, Shortle, Thompson &
// Harris, "Fundamentals of Queueing Theory", 4th ed., section 2.3).
inline double erlang_c(std::int64_t c, double a) {
  double b = 1.0;
  for (std::int64_t k = 1; k <= c; ++k) b = a * b / (static_cast<double>(k) + a * b);
  const double rho = a / static_cast<double>(c);
  return b / (1.0 - rho * (1.0 - b));
}

// Mean wait in queue of M/M/c: Wq = C(c, λ/μ) / (c μ - λ) (same sources); for c = 1 it is the
// M/M/1 formula ρ / (μ - λ). Requires λ < c μ.
inline double mmc_mean_wait(double lambda, double mu, std::int64_t c) {
  return erlang_c(c, lambda / mu) / (static_cast<double>(c) * mu - lambda);
}

}  // namespace backoff::sim
