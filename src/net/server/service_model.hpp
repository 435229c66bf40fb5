// The service time of `backoff serve`: seed 004's server (smira/exponential-backoff, server.go),
// whose latency is a function of how many requests it is working on. The same formula as the
// simulator's concurrency_server (docs/models/outage-recovery.md), so a real run and a simulated
// one can be compared:
//
//   D(N) = base_delay                                  if N <= limit
//   D(N) = base_delay * factor^((N - limit) / k)       if N > limit
//
// A request started at s is checked at s + j * tick (j = 1, 2, ...) with the N of that moment and
// answered at the first check where it has been served D(N) or longer.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>

#include "backoff/duration.hpp"

namespace backoff::net {

struct service_params {
  std::int64_t limit = 30;                               // -limit
  double factor = 1.05;                                  // -factor
  double k = 15;                                         // the 15.0 in server.go
  duration base_delay = std::chrono::milliseconds(100);  // -baseDelay
  duration tick = std::chrono::milliseconds(50);         // the handler's time.After(50 ms)
};

// D(N), saturating at duration::max() (N in the tens of thousands overflows any clock).
inline duration service_time(const service_params& p, std::int64_t concurrency) {
  if (concurrency <= p.limit || p.base_delay.count() == 0) return p.base_delay;
  const double exponent = static_cast<double>(concurrency - p.limit) / p.k;
  const double ns = static_cast<double>(p.base_delay.count()) * std::pow(p.factor, exponent);
  if (!(ns < 9.2e18)) return duration::max();
  return duration(static_cast<std::int64_t>(ns));
}

}  // namespace backoff::net
