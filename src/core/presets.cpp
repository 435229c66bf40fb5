// SPDX-License-Identifier: Apache-2.0
// The presets of SPEC 1.3. Each entry cites its source; where the source left a choice open, the
// comment says how we read it (docs/POLICIES.md has the full discussion).
#include "backoff/presets.hpp"

#include <array>

namespace backoff {
namespace {

using namespace std::chrono_literals;

backoff_policy make(schedule_kind schedule, duration initial, double factor, duration max,
                    jitter_kind jitter, cap_mode cap = cap_mode::before) {
  backoff_policy p;
  p.schedule = schedule;
  p.initial = initial;
  p.factor = factor;
  p.max = max;
  p.jitter = jitter;
  p.cap = cap;
  return p;
}

std::array<preset, 14> build() {
  constexpr auto expo = schedule_kind::exponential;
  constexpr auto constant = schedule_kind::constant;

  // Seed 001 ("Exploring backoff"): the tick model's five strategies, one unit = 1 s (1 tick).
  backoff_policy none = make(constant, 0s, 2.0, duration::max(), jitter_kind::none);
  backoff_policy fixed = make(constant, 5s, 2.0, duration::max(), jitter_kind::none);
  backoff_policy uniform = make(constant, 5s, 2.0, duration::max(), jitter_kind::full);
  // "max(2^attempts, 30)": the seed means a cap. `attempts` counts the attempts made, so the
  // wait after the first failure is 2^1 = 2 units: initial 2 s, doubling, capped at 30 s.
  backoff_policy exponential = make(expo, 2s, 2.0, 30s, jitter_kind::none);
  backoff_policy exponential_random = make(expo, 2s, 2.0, 30s, jitter_kind::full);

  // Seed 002 (Cloud IoT Core): min(2^n s + random_number_milliseconds, maximum_backoff), the
  // random part at most 1000 ms and inside the min(); maximum_backoff "typically 32 or 64 s".
  backoff_policy gcp_iot = make(expo, 1s, 2.0, 64s, jitter_kind::additive, cap_mode::after);
  gcp_iot.jitter_max = 1s;

  // Seed 000 (Thain): delay = MIN(R * T * F^N, M), R in [1, 2], F = 2; T and M are the
  // user's (defaults 1 s and 60 s); the cap applies to the randomized value.
  backoff_policy ethernet = make(expo, 1s, 2.0, 60s, jitter_kind::multiplicative, cap_mode::after);
  ethernet.lo = 1.0;
  ethernet.hi = 2.0;

  // The Fault Tolerant Shell's own: 1 s doubling, the base capped at 1 hour, then times
  // U(1, 2), so the longest wait is 2 hours.
  backoff_policy ftsh = make(expo, 1s, 2.0, 3600s, jitter_kind::multiplicative, cap_mode::before);
  ftsh.lo = 1.0;
  ftsh.hi = 2.0;

  // Seed 004's article, blue curve: delay = MinDelay; after each failure
  // delay = min(delay * Factor, MaxDelay); delay += norm_variate(delay * Jitter). The growth is
  // from the previous (jittered) delay, the cap comes before the jitter, and the first wait is
  // MinDelay itself.
  backoff_policy smira = make(expo, 100ms, 2.7, 10min, jitter_kind::gaussian, cap_mode::before);
  smira.sigma = 0.1;
  smira.grow = growth::previous;
  smira.jitter_first = false;

  // Seed 004's Go client: delay = min(lastDelay * 2.71828, 5 min) + NormFloat64 * 0.1 s, with
  // lastDelay = 100 ms after a success. The first retry's base is therefore
  // 100 ms * 2.71828 = 271.828 ms, and each later one grows from the previous actual delay.
  backoff_policy smira_go =
      make(expo, 271'828us, 2.71828, 5min, jitter_kind::gaussian, cap_mode::before);
  smira_go.sd = 100ms;
  smira_go.grow = growth::previous;

  // The AWS Architecture Blog's simulator: base 5 ms, cap 2 s, expo(n) = min(cap, base * 2^n)
  // with n = 1 at the first retry (so its first base is 10 ms); decorrelated starts from
  // sleep = base and draws U(base, 3 * sleep).
  backoff_policy aws_full = make(expo, 10ms, 2.0, 2s, jitter_kind::full);
  backoff_policy aws_equal = make(expo, 10ms, 2.0, 2s, jitter_kind::equal);
  backoff_policy aws_decorrelated = make(expo, 5ms, 2.0, 2s, jitter_kind::decorrelated);

  // gRPC connection backoff (doc/connection-backoff.md): INITIAL_BACKOFF 1 s, MULTIPLIER 1.6,
  // MAX_BACKOFF 120 s, JITTER 0.2; the first delay is jittered too, and the jitter applies to
  // the capped base, so a delay can exceed 120 s by up to 20 %.
  backoff_policy grpc = make(expo, 1s, 1.6, 120s, jitter_kind::proportional, cap_mode::before);
  grpc.r = 0.2;

  return {{
      {"none", "0 (retry at once; the next tick in the tick model)", "Exploring backoff (2019), NB",
       none},
      {"constant", "5 units", "Exploring backoff (2019), CB", fixed},
      {"uniform", "U(0, 5) units", "Exploring backoff (2019), URB", uniform},
      {"exponential", "min(2^attempts, 30) units, attempts = n + 1", "Exploring backoff (2019), EB",
       exponential},
      {"exponential-random", "U(0, min(2^attempts, 30)) units", "Exploring backoff (2019), REB",
       exponential_random},
      {"gcp-iot", "min(2^n s + U(0, 1000 ms), 64 s)",
       "Google Cloud, Implementing Exponential Backoff (Cloud IoT Core docs)", gcp_iot},
      {"ethernet", "min(R * 1 s * 2^n, 60 s), R ~ U(1, 2)",
       "Thain, Exponential Backoff in Distributed Systems (2009)", ethernet},
      {"ftsh", "min(2^n s, 3600 s) * U(1, 2)", "Thain, ftsh Technical Manual (2004)", ftsh},
      {"smira", "d0 = 100 ms; d = min(d * 2.7, 10 min); d += N(0, 0.1 d)",
       "smira, Exponential Backoff or how not to crash a server (2016), blue curve", smira},
      {"smira-go", "d = min(d * 2.71828, 5 min) + N(0, 0.1 s), d starting at 100 ms",
       "smira, Exponential Backoff or how not to crash a server (2016), Go client", smira_go},
      {"aws-full", "U(0, min(2 s, 5 ms * 2^(n+1)))",
       "Brooker, Exponential Backoff And Jitter (2015), Full Jitter", aws_full},
      {"aws-equal", "v/2 + U(0, v/2), v = min(2 s, 5 ms * 2^(n+1))",
       "Brooker, Exponential Backoff And Jitter (2015), Equal Jitter", aws_equal},
      {"aws-decorrelated", "s = min(2 s, U(5 ms, 3 s)), s starting at 5 ms",
       "Brooker, Exponential Backoff And Jitter (2015), Decorrelated Jitter", aws_decorrelated},
      {"grpc", "min(1 s * 1.6^n, 120 s) * U(0.8, 1.2)", "gRPC, Connection Backoff Protocol", grpc},
  }};
}

}  // namespace

std::span<const preset> presets() {
  static const std::array<preset, 14> all = build();
  return all;
}

const preset* find_preset(std::string_view name) noexcept {
  for (const preset& p : presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace backoff
