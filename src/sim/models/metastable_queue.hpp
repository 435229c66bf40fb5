// SPDX-License-Identifier: Apache-2.0
// Metafor's Markov-chain view of the `metastable-queue` model (docs/models/metastable-queue.md),
// for cross-checking the discrete-event model: the continuous-time Markov chain that
// mpi-sws-rse/metafor builds for one server with timeouts and retries
// (metafor/ctmc_model/single_server/ctmc.py, SingleServerCTMC.generator_mat_exact), rebuilt
// here rate for rate, and its stationary distribution.
//
//   namespace mq = backoff::sim::metastable_queue_model;
//   mq::chain_params p;                                   // metafor's canonical example
//   std::vector<double> pi = mq::stationary(p);           // pi[mq::state(p, n, r)]
//   double down = mq::mass_at_or_above(p, pi, 25);        // P(queue >= 25): the high mode
//
// A state is (n, r): n requests in the server (0 .. queue_states - 1, the one in service
// included), r requests in the "orbit" (0 .. orbit_states - 1): requests that timed out and will
// retry or give up. Rates (metafor's, with its defaults alpha = 0.25, retry_when_full = false):
//   - tail(n): the chance that a request finding n ahead times out, Chebyshev's bound on the
//     Erlang(n, mu) wait: (sigma / (T - mean))^2 when T - mean > sigma, else 1 (tail(0) = 0);
//   - an orbit request retries at rate R / ((R + 1) T) and gives up at 1 / ((R + 1) T);
//   - n = 0: arrival lambda -> (1, r); retry -> (1, r - 1); give up -> (0, r - 1);
//   - 0 < n < full: lambda + r retry tail -> (n + 1, r); alpha lambda tail -> (n + 1, r + 1);
//     r retry (1 - tail) -> (n + 1, r - 1); give up -> (n, r - 1); service min(n, c) mu -> n - 1;
//   - n = full: service -> n - 1; retry and give up both -> (n, r - 1) (no retry when full).
// The stationary distribution is computed by Grassmann-Taksar-Heyman state reduction (Grassmann,
// Taksar & Heyman, Operations Research 33(5), 1985), which subtracts nothing and so stays
// accurate when the chain is nearly decomposable (metastable: two modes rarely visited in turn).
// States are ordered r * queue_states + n, so every transition stays within a band of
// queue_states + 1 and the reduction costs states x band^2 (0.04 s for the canonical 2000).
#pragma once

#include <cstddef>
#include <vector>

namespace backoff::sim::metastable_queue_model {

struct chain_params {
  int queue_states = 100;  // metafor's qsize: n = 0 .. 99
  int orbit_states = 20;   // metafor's orbit_size: r = 0 .. 19
  double lambda = 9.5;     // arrivals per second
  double mu = 10;          // services per second per thread
  double timeout_s = 3;    // T
  int retries = 4;         // R
  int threads = 1;         // c
  double alpha = 0.25;     // metafor's calibration factor (its default)
};

// The index of state (n, r).
inline std::size_t state(const chain_params& p, int n, int r) {
  return static_cast<std::size_t>(r) * static_cast<std::size_t>(p.queue_states) +
         static_cast<std::size_t>(n);
}

// metafor's tail(n) for n = 0 .. queue_states - 1.
std::vector<double> timeout_tail(const chain_params& p);

// The stationary distribution, indexed by state(); sums to 1.
std::vector<double> stationary(const chain_params& p);

// P(n >= level) under `pi`.
double mass_at_or_above(const chain_params& p, const std::vector<double>& pi, int level);
// The mean time (seconds) for the chain started empty, (0, 0), to first have n >= level
// (metafor's hitting_time_average_us; level = queue_states - 1 is its "queue full").
double mean_time_to_reach(const chain_params& p, int level);
// E[n] under `pi` (metafor's main_queue_size_average).
double mean_queue(const chain_params& p, const std::vector<double>& pi);

}  // namespace backoff::sim::metastable_queue_model
