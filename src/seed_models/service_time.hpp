// SPDX-License-Identifier: Apache-2.0
// Seed 004's service time (smira/exponential-backoff, server.go), the one formula that both the
// simulator's concurrency_server and `backoff serve` use, so that a real run and a simulated one
// can be compared (the outage experiment does):
//
//   D(N) = base                                  if N <= limit (or base is 0)
//   D(N) = base * factor^((N - limit) / k)       if N > limit
//
// In the caller's time units, as a double. A request is served once the time it has been in
// service, a whole number of units, is at least D: callers compare against the double itself (or
// its ceiling, which is the same test for integers), never a truncation that ends service up to
// one unit early.
#pragma once

#include <cmath>
#include <cstdint>

namespace backoff::seed_models {

struct service_curve {
  std::int64_t limit = 30;  // server.go's -limit
  double factor = 1.05;     // -factor
  double k = 15;            // the 15.0 in server.go
};

inline double service_time(const service_curve& c, double base, std::int64_t concurrency) {
  // base 0 stays 0 at any N (0 x an overflowed power would be NaN, and nothing is >= NaN).
  if (concurrency <= c.limit || base == 0) return base;
  return base * std::pow(c.factor, static_cast<double>(concurrency - c.limit) / c.k);
}

}  // namespace backoff::seed_models
