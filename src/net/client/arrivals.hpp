// SPDX-License-Identifier: Apache-2.0
// When an open-loop load generator means to send: the intended send times of `backoff load
// --rate/--ramp`, computed ahead of the clock so that latency can be measured from them (wrk2's
// correction of coordinated omission) and a generator that falls behind is seen (late sends).
//
//   arrival_schedule s(arrival_kind::poisson, parse_ramp("0s:100/s,60s:2000/s"), seed);
//   for (;;) { const auto t = s.next(); if (!t) break; /* send at start + *t */ }
//
// The rate is piecewise linear between the ramp's points and holds the last one after it, as k6's
// ramping-arrival-rate stages; a plain --rate is one point. With Λ(t) the integral of the rate
// from 0, send n (0-based) is at Λ⁻¹(n) for constant arrivals (the first at time 0, as k6 starts
// an iteration at once) and at Λ⁻¹(E₁ + ... + Eₙ₊₁), Eᵢ exponential with mean 1, for Poisson
// arrivals: the time change that turns a unit Poisson process into one of intensity rate(t)
// (Çinlar's theorem). Both are exact for a linear rate (a quadratic per segment), so a ramp does
// not drift with the number of sends.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/random.hpp"

namespace backoff::net {

enum class arrival_kind { poisson, constant };

struct rate_point {
  duration at{0};
  double per_s = 0;
};

// "500", "500/s", "30/m", "2/ms", "1.5e3/s": sends per second; throws backoff::parse_error
// naming the flag. A rate is at most 1e7/s; `allow_zero` lets a ramp point stop the sends.
double parse_rate(std::string_view flag, std::string_view text, bool allow_zero);

// "0s:100/s,60s:2000/s": points of time (a duration) and rate, the first at 0s, times strictly
// increasing. Throws backoff::parse_error naming the point that is wrong.
std::vector<rate_point> parse_ramp(std::string_view text);

// "poisson" or "constant".
arrival_kind parse_arrival(std::string_view text);

class arrival_schedule {
 public:
  // `points` as parse_ramp returns them (one point {0s, rate} for a fixed rate).
  arrival_schedule(arrival_kind kind, std::vector<rate_point> points, std::uint64_t seed);

  // The next intended send time (from the start of the run), or none when the rate has fallen to
  // zero for good.
  std::optional<duration> next();

  // Λ(t) and its inverse, in sends (exposed for tests).
  double expected_sends(duration t) const;
  std::optional<duration> time_of(double sends) const;

 private:
  arrival_kind kind_;
  std::vector<rate_point> points_;
  std::vector<double> cumulative_;  // Λ at each point
  random_generator rng_;
  double target_ = 0;  // Λ of the next send
  std::uint64_t sent_ = 0;
};

}  // namespace backoff::net
