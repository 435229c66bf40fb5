// SPDX-License-Identifier: Apache-2.0
// The decision per request (faults.hpp: decide, paused_until): which faults of a plan fire for
// one request at one time, drawing only for those that need a draw, in plan order.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "faults.hpp"

namespace backoff::faults {
namespace {

// Requests whose header `name` has one of `values` (compared exactly), or whose path starts
// with the prefix.
bool matches(const fault& f, const request_view& request) {
  if (!f.header.empty()) {
    if (!request.header) return false;
    const std::string_view value = request.header(f.header);
    return std::find(f.values.begin(), f.values.end(), value) != f.values.end();
  }
  return request.path.starts_with(f.path_prefix);
}

bool hits(double rate, random_generator& rng) {
  if (rate >= 1.0) return true;
  if (rate <= 0.0) return false;
  return uniform01(rng) < rate;
}

// A fading errors fault's share of its rate for this request: 1 - t / fade, t being the
// caller's time since its first attempt (since_first_attempt_header, ms); 1 when the header is
// absent or not a number from 0 (a first attempt).
double faded(const fault& f, const request_view& request) {
  if (f.fade <= duration{0} || !request.header) return 1.0;
  const std::string_view text = request.header(since_first_attempt_header);
  double ms = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || !(ms >= 0)) {
    return 1.0;
  }
  const double fade_ms = static_cast<double>(f.fade.count()) * 1e-6;
  return 1.0 - std::min(ms / fade_ms, 1.0);
}

duration clamp_wait(double ns) {
  if (!(ns > 0)) return duration{0};
  if (ns >= static_cast<double>(longest_injected_wait.count())) return longest_injected_wait;
  return duration(static_cast<std::int64_t>(ns));
}

duration draw_latency(const fault& f, random_generator& rng) {
  const double a = static_cast<double>(f.a.count());
  switch (f.distribution) {
    case latency_distribution::fixed:
      return f.a;
    case latency_distribution::uniform:
      return clamp_wait(uniform(rng, a, static_cast<double>(f.b.count())));
    case latency_distribution::exponential:
      return clamp_wait(exponential_variate(rng, a));
    case latency_distribution::lognormal:
      return clamp_wait(a * std::exp(f.sigma * standard_normal(rng)));
    case latency_distribution::pareto:
      // Inversion: scale / (1 - u)^(1 / shape), with 1 - u in (0, 1].
      return clamp_wait(a / std::pow(1.0 - uniform01(rng), 1.0 / f.shape));
  }
  return duration{0};
}

// A whole number of at most 19 digits and nothing else (an Envoy header's value).
std::optional<std::uint64_t> whole_number(std::string_view text) {
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return n;
}

// A keyed outage: whether the request's key is among the keys that are down (no draw, so that
// the same key fails every retry).
bool key_down(const fault& f, const request_view& request) {
  if (f.keys >= 1.0) return true;
  const std::string_view value = request.header ? request.header(f.key_header) : "";
  if (value.empty()) return false;
  std::uint64_t key = 0;
  if (const auto n = whole_number(value)) {
    key = *n;
  } else {
    key = 14695981039346656037ULL;  // FNV-1a
    for (const char c : value) key = (key ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return static_cast<double>(key % 1000) < f.keys * 1000.0;
}

// Envoy's percentage header: a whole number of hundredths, at most 100 % (Envoy caps a header
// at the configured percentage, here 100 %); absent or malformed: 100 %.
double envoy_share(const request_view& request, std::string_view name) {
  const auto n = whole_number(request.header(name));
  if (!n) return 1.0;
  return std::min<double>(static_cast<double>(*n), 100.0) / 100.0;
}

}  // namespace

std::optional<duration> paused_until(const fault_plan& plan, duration since_start) {
  std::optional<duration> until;
  for (const scheduled_fault& sf : plan.faults) {
    if (sf.what.kind == fault_kind::outage && sf.what.action == outage_action::pause &&
        sf.when.contains(since_start)) {
      until = std::max(until.value_or(duration{0}), sf.when.end);
    }
  }
  return until;
}

double capacity_share(const fault_plan& plan, duration since_start) {
  double share = 1.0;
  for (const scheduled_fault& sf : plan.faults) {
    if (sf.what.kind == fault_kind::capacity && sf.when.contains(since_start)) {
      share *= sf.what.share;
    }
  }
  return share;
}

fault_decision decide(const fault_plan& plan, duration since_start, const request_view& request,
                      random_generator& rng) {
  fault_decision d;
  // A service that is down answers at once: outages and partial outages first, without latency.
  for (const scheduled_fault& sf : plan.faults) {
    if (!sf.when.contains(since_start)) continue;
    const fault& f = sf.what;
    if (f.kind == fault_kind::outage) {
      if (!key_down(f, request) || !hits(f.rate, rng)) continue;
      d.fired |= 1u << counter_outage;
      switch (f.action) {
        case outage_action::reset:
          d.reset = true;
          break;
        case outage_action::hang:
        case outage_action::pause:
          d.hold_until = sf.when.end;
          break;
        case outage_action::status:
          d.abort_status = f.status;
          break;
      }
      return d;
    }
    if (f.kind == fault_kind::partial && matches(f, request)) {
      if (!hits(f.rate, rng)) continue;
      d.fired |= 1u << counter_partial;
      d.abort_status = f.status;
      return d;
    }
  }
  // Then as Envoy's fault filter: delays, then an abort.
  for (const scheduled_fault& sf : plan.faults) {
    if (sf.what.kind != fault_kind::latency || !sf.when.contains(since_start)) continue;
    if (!hits(sf.what.rate, rng)) continue;
    d.fired |= 1u << counter_latency;
    d.delay = std::min(d.delay + draw_latency(sf.what, rng), longest_injected_wait);
  }
  // A cold start slows the service's own work, which the driver multiplies: slowdowns multiply.
  for (const scheduled_fault& sf : plan.faults) {
    if (sf.what.kind != fault_kind::cold_start || !sf.when.contains(since_start)) continue;
    if (!hits(sf.what.rate, rng)) continue;
    d.fired |= 1u << counter_cold_start;
    const double halvings = static_cast<double>((since_start - sf.when.start).count()) /
                            static_cast<double>(sf.what.half_life.count());
    d.slowdown *= 1.0 + (sf.what.factor - 1.0) * std::exp2(-halvings);
  }
  if (plan.envoy_headers && request.header) {
    if (const auto ms = whole_number(request.header("x-envoy-fault-delay-request"))) {
      if (hits(envoy_share(request, "x-envoy-fault-delay-request-percentage"), rng)) {
        d.fired |= 1u << counter_envoy_delay;
        const auto capped = std::min<std::uint64_t>(
            *ms, static_cast<std::uint64_t>(
                     std::chrono::duration_cast<std::chrono::milliseconds>(longest_injected_wait)
                         .count()));
        d.delay = std::min(d.delay + std::chrono::milliseconds(capped), longest_injected_wait);
      }
    }
    if (const auto status = whole_number(request.header("x-envoy-fault-abort-request"));
        status && *status >= 200 && *status <= 599) {
      if (hits(envoy_share(request, "x-envoy-fault-abort-request-percentage"), rng)) {
        d.fired |= 1u << counter_envoy_abort;
        d.abort_status = static_cast<int>(*status);
        return d;
      }
    }
  }
  for (const scheduled_fault& sf : plan.faults) {
    if (sf.what.kind != fault_kind::errors || !sf.when.contains(since_start)) continue;
    if (!hits(sf.what.rate * faded(sf.what, request), rng)) continue;
    d.fired |= 1u << counter_errors;
    d.abort_status = sf.what.status;
    return d;
  }
  for (const scheduled_fault& sf : plan.faults) {
    if (sf.what.kind != fault_kind::slow_body || !sf.when.contains(since_start)) continue;
    if (!hits(sf.what.rate, rng)) continue;
    d.fired |= 1u << counter_slow_body;
    d.slow = slow_body_plan{sf.what.body_size, sf.what.bytes_per_s};
    break;
  }
  return d;
}
}  // namespace backoff::faults
