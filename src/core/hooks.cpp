// SPDX-License-Identifier: Apache-2.0
// Names of retry reasons, and retry_metrics in Prometheus' text exposition format
// (https://prometheus.io/docs/instrumenting/exposition_formats/, version 0.0.4).
#include "backoff/hooks.hpp"

#include <charconv>
#include <stdexcept>
#include <system_error>

namespace backoff {

std::string_view to_string(retry_reason r) noexcept {
  switch (r) {
    case retry_reason::failed:
      return "failed";
    case retry_reason::retry_after:
      return "retry_after";
    case retry_reason::deferred:
      return "deferred";
    case retry_reason::timed_out:
      return "timed_out";
    case retry_reason::exception:
      return "exception";
  }
  return "?";
}

namespace {

bool is_metric_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

void append_number(std::string& out, double value) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, ec == std::errc{} ? end : buffer);
}

void append_counter(std::string& out, std::string_view prefix, std::string_view name,
                    std::string_view help, std::uint64_t value) {
  out.append("# HELP ").append(prefix).append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(prefix).append(name).append(" counter\n");
  out.append(prefix).append(name).append(" ").append(std::to_string(value)).append("\n");
}

}  // namespace

std::string to_prometheus_text(const retry_metrics& m, std::string_view prefix) {
  if (!is_metric_name(prefix)) {
    throw std::invalid_argument("to_prometheus_text: prefix '" + std::string(prefix) +
                                "' is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
  }
  const auto load = [](const auto& counter) { return counter.load(std::memory_order_relaxed); };
  const std::string p = std::string(prefix) + "_";
  std::string out;
  append_counter(out, p, "attempts_total", "Attempts started by retry loops.", load(m.attempts));
  append_counter(out, p, "retries_total", "Waits before another attempt.", load(m.retries));
  append_counter(out, p, "attempt_timeouts_total",
                 "Attempts cancelled at their per-attempt timeout.", load(m.timeouts));
  append_counter(out, p, "attempt_exceptions_total",
                 "Attempts that threw an exception the classifier retries.", load(m.exceptions));
  out.append("# HELP ").append(p).append("retry_wait_seconds_total Time spent waiting to retry.\n");
  out.append("# TYPE ").append(p).append("retry_wait_seconds_total counter\n");
  out.append(p).append("retry_wait_seconds_total ");
  append_number(out, static_cast<double>(load(m.wait_nanoseconds)) * 1e-9);
  out.append("\n");
  out.append("# HELP ").append(p).append("loops_total Retry loops ended, by outcome.\n");
  out.append("# TYPE ").append(p).append("loops_total counter\n");
  for (std::size_t i = 0; i < outcome_count; ++i) {
    out.append(p).append("loops_total{outcome=\"");
    out.append(to_string(static_cast<outcome>(i))).append("\"} ");
    out.append(std::to_string(load(m.loops[i]))).append("\n");
  }
  out.append("# HELP ").append(p).append(
      "breaker_transitions_total Circuit breaker transitions, by the state entered.\n");
  out.append("# TYPE ").append(p).append("breaker_transitions_total counter\n");
  for (std::size_t i = 0; i < breaker_state_count; ++i) {
    out.append(p).append("breaker_transitions_total{to=\"");
    out.append(to_string(static_cast<breaker_state>(i))).append("\"} ");
    out.append(std::to_string(load(m.breaker_transitions[i]))).append("\n");
  }
  return out;
}

}  // namespace backoff
