// SPDX-License-Identifier: Apache-2.0
// The service time of `backoff serve`: seed 004's server (smira/exponential-backoff, server.go),
// whose latency is a function of how many requests it is working on: D(N) of
// seed_models/service_time.hpp, the formula the simulator's concurrency_server uses too.
//
// A request started at s is checked at s + j * tick (j = 1, 2, ...) with the N of that moment and
// answered at the first check where it has been served D(N) or longer.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>

#include "backoff/duration.hpp"
#include "seed_models/service_time.hpp"

namespace backoff::net {

struct service_params {
  std::int64_t limit = 30;                               // -limit
  double factor = 1.05;                                  // -factor
  double k = 15;                                         // the 15.0 in server.go
  duration base_delay = std::chrono::milliseconds(100);  // -baseDelay
  duration tick = std::chrono::milliseconds(50);         // the handler's time.After(50 ms)
};

// D(N) rounded up to whole nanoseconds (a request in service t ns, t whole, is served iff
// t >= D, iff t >= ceil(D)), saturating at duration::max() (N in the tens of thousands overflows
// any clock).
inline duration service_time(const service_params& p, std::int64_t concurrency) {
  const double ns = seed_models::service_time(
      {p.limit, p.factor, p.k}, static_cast<double>(p.base_delay.count()), concurrency);
  if (!(ns < 9.2e18)) return duration::max();
  return duration(static_cast<std::int64_t>(std::ceil(ns)));
}

}  // namespace backoff::net
