// SPDX-License-Identifier: Apache-2.0
// Names of retry reasons, and retry_metrics in Prometheus' text exposition format.
#include "backoff/hooks.hpp"

#include <array>
#include <stdexcept>

#include "backoff/prometheus_text.hpp"

namespace backoff {

std::string_view to_string(retry_reason r) noexcept {
  // In the enum's order (hooks.hpp).
  static constexpr std::array<std::string_view, 5> names{"failed", "retry_after", "deferred",
                                                         "timed_out", "exception"};
  const auto i = static_cast<std::size_t>(r);
  return i < names.size() ? names[i] : "?";
}

std::string to_prometheus_text(const retry_metrics& m, std::string_view prefix) {
  if (!is_prometheus_metric_name(prefix)) {
    throw std::invalid_argument("to_prometheus_text: prefix '" + std::string(prefix) +
                                "' is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
  }
  const auto load = [](const auto& counter) { return counter.load(std::memory_order_relaxed); };
  const auto name = [&](std::string_view suffix) {
    return std::string(prefix) + "_" + std::string(suffix);
  };
  prometheus_writer out;
  out.counter(name("attempts_total"), "Attempts started by retry loops.", load(m.attempts));
  out.counter(name("retries_total"), "Waits before another attempt.", load(m.retries));
  out.counter(name("attempt_timeouts_total"), "Attempts cancelled at their per-attempt timeout.",
              load(m.timeouts));
  out.counter(name("attempt_exceptions_total"),
              "Attempts that threw an exception the classifier retries.", load(m.exceptions));
  out.counter(name("retry_wait_seconds_total"), "Time spent waiting to retry.",
              static_cast<double>(load(m.wait_nanoseconds)) * 1e-9);
  const std::string loops = name("loops_total");
  out.family(loops, prometheus_type::counter, "Retry loops ended, by outcome.");
  for (std::size_t i = 0; i < outcome_count; ++i) {
    out.sample(loops, {{"outcome", to_string(static_cast<outcome>(i))}}, load(m.loops[i]));
  }
  const std::string transitions = name("breaker_transitions_total");
  out.family(transitions, prometheus_type::counter,
             "Circuit breaker transitions, by the state entered.");
  for (std::size_t i = 0; i < breaker_state_count; ++i) {
    out.sample(transitions, {{"to", to_string(static_cast<breaker_state>(i))}},
               load(m.breaker_transitions[i]));
  }
  return out.take();
}

}  // namespace backoff
