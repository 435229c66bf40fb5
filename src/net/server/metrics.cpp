// SPDX-License-Identifier: Apache-2.0
#include "metrics.hpp"

#include <fmt/format.h>

namespace backoff::net {

void server_metrics::answered(int status) noexcept {
  switch (status) {
    case 200:
      ok_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 400:
      bad_request_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 404:
      not_found_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 405:
      not_allowed_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 401:
      unauthorized_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 403:
      forbidden_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 408:
      request_timeout_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 504:
      gateway_timeout_.fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      if (status == reject_status) {
        rejected_.fetch_add(1, std::memory_order_relaxed);  // --max-busy's 503 or 429
      } else if (status >= 100 && status <= 599) {
        other_statuses_[static_cast<std::size_t>(status - 100)].fetch_add(
            1, std::memory_order_relaxed);
      }
      break;
  }
}

void server_metrics::faults_fired(unsigned fired) noexcept {
  for (unsigned c = 0; c < fault_counter_count; ++c) {
    if (fired & (1u << c)) faults_[c].fetch_add(1, std::memory_order_relaxed);
  }
}

void server_metrics::expired(expiry when) noexcept {
  expired_[static_cast<std::size_t>(when)].fetch_add(1, std::memory_order_relaxed);
}

void server_metrics::closed(close_reason why) noexcept {
  closed_[static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed);
}

void server_metrics::observe_service(duration d) noexcept {
  const double s = to_seconds(d);
  std::size_t i = 0;
  while (i < service_buckets_s.size() && s > service_buckets_s[i]) ++i;
  service_counts_[i].fetch_add(1, std::memory_order_relaxed);
  service_sum_ns_.fetch_add(d.count(), std::memory_order_relaxed);
}

void server_metrics::paused(bool on) noexcept {
  if (!paused_.exchange(on) && on) pauses_.fetch_add(1, std::memory_order_relaxed);
}

metrics_snapshot server_metrics::snapshot() const noexcept {
  metrics_snapshot s;
  s.concurrency = concurrency.load();
  s.connections = connections.load();
  s.paused = paused_.load();
  s.ok = ok_.load();
  s.rejected = rejected_.load();
  s.bad_request = bad_request_.load();
  s.not_found = not_found_.load();
  s.not_allowed = not_allowed_.load();
  s.abandoned = abandoned_.load();
  s.unauthorized = unauthorized_.load();
  s.forbidden = forbidden_.load();
  s.request_timeout = request_timeout_.load();
  s.gateway_timeout = gateway_timeout_.load();
  s.expired_before_service = expired_[static_cast<std::size_t>(expiry::before_service)].load();
  s.expired_in_service = expired_[static_cast<std::size_t>(expiry::in_service)].load();
  s.header_timeouts = closed_[static_cast<std::size_t>(close_reason::header_timeout)].load();
  s.idle_timeouts = closed_[static_cast<std::size_t>(close_reason::idle_timeout)].load();
  s.write_timeouts = closed_[static_cast<std::size_t>(close_reason::write_timeout)].load();
  s.evicted = closed_[static_cast<std::size_t>(close_reason::evicted)].load();
  s.refused = closed_[static_cast<std::size_t>(close_reason::refused)].load();
  s.pauses = pauses_.load();
  s.last_delay_ns = last_delay_ns.load();
  for (std::size_t i = 0; i < service_counts_.size(); ++i) s.service_counts[i] = service_counts_[i];
  s.service_sum_s = static_cast<double>(service_sum_ns_.load()) * 1e-9;
  s.reject_status = reject_status;
  for (std::size_t i = 0; i < other_statuses_.size(); ++i) s.other_statuses[i] = other_statuses_[i];
  for (std::size_t i = 0; i < faults_.size(); ++i) s.faults[i] = faults_[i];
  return s;
}

std::string prometheus_text(const metrics_snapshot& s) {
  std::string out;
  const auto counter = [&](const char* name, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", name, help, name);
  };
  const auto gauge = [&](const char* name, const char* help, double value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, value);
  };
  counter("backoff_requests_total", "Requests answered, by HTTP status.");
  out += fmt::format("backoff_requests_total{{status=\"200\"}} {}\n", s.ok);
  out += fmt::format("backoff_requests_total{{status=\"{}\"}} {}\n", s.reject_status, s.rejected);
  out += fmt::format("backoff_requests_total{{status=\"400\"}} {}\n", s.bad_request);
  out += fmt::format("backoff_requests_total{{status=\"404\"}} {}\n", s.not_found);
  out += fmt::format("backoff_requests_total{{status=\"405\"}} {}\n", s.not_allowed);
  out += fmt::format("backoff_requests_total{{status=\"401\"}} {}\n", s.unauthorized);
  out += fmt::format("backoff_requests_total{{status=\"403\"}} {}\n", s.forbidden);
  out += fmt::format("backoff_requests_total{{status=\"408\"}} {}\n", s.request_timeout);
  out += fmt::format("backoff_requests_total{{status=\"504\"}} {}\n", s.gateway_timeout);
  for (std::size_t i = 0; i < s.other_statuses.size(); ++i) {
    if (s.other_statuses[i] == 0) continue;
    out +=
        fmt::format("backoff_requests_total{{status=\"{}\"}} {}\n", i + 100, s.other_statuses[i]);
  }
  counter("backoff_faults_total",
          "Requests to /api a fault was injected into, by kind (docs/NETWORK.md, Faults on "
          "demand).");
  for (unsigned c = 0; c < fault_counter_count; ++c) {
    out += fmt::format("backoff_faults_total{{fault=\"{}\"}} {}\n",
                       fault_counter_name(static_cast<fault_counter>(c)), s.faults[c]);
  }
  counter("backoff_closed_connections_total",
          "Connections the server closed: header, idle or write timeout, an idle or half-sent one "
          "evicted for a new one at --max-connections, a new one refused there.");
  out += fmt::format("backoff_closed_connections_total{{reason=\"header_timeout\"}} {}\n",
                     s.header_timeouts);
  out += fmt::format("backoff_closed_connections_total{{reason=\"idle_timeout\"}} {}\n",
                     s.idle_timeouts);
  out += fmt::format("backoff_closed_connections_total{{reason=\"write_timeout\"}} {}\n",
                     s.write_timeouts);
  out += fmt::format("backoff_closed_connections_total{{reason=\"evicted\"}} {}\n", s.evicted);
  out += fmt::format("backoff_closed_connections_total{{reason=\"refused\"}} {}\n", s.refused);
  counter("backoff_abandoned_requests_total",
          "Requests dropped because the client disconnected (--cancel-on-disconnect).");
  out += fmt::format("backoff_abandoned_requests_total {}\n", s.abandoned);
  counter("backoff_expired_requests_total",
          "Requests to /api whose propagated deadline had passed, answered 504: before their "
          "service started (served --expired-cost of it), or during it (stopped there).");
  out += fmt::format("backoff_expired_requests_total{{stage=\"before_service\"}} {}\n",
                     s.expired_before_service);
  out += fmt::format("backoff_expired_requests_total{{stage=\"in_service\"}} {}\n",
                     s.expired_in_service);
  counter("backoff_pauses_total", "Pauses through POST /admin/pause.");
  out += fmt::format("backoff_pauses_total {}\n", s.pauses);
  gauge("backoff_concurrency", "Requests to /api being served, abandoned ones included.",
        static_cast<double>(s.concurrency));
  gauge("backoff_connections", "Open client connections.", static_cast<double>(s.connections));
  gauge("backoff_paused", "1 while the service is paused.", s.paused ? 1.0 : 0.0);
  gauge("backoff_last_delay_seconds", "The service time computed at the latest check.",
        static_cast<double>(s.last_delay_ns) * 1e-9);
  out +=
      "# HELP backoff_service_seconds Time from the start of an /api request to its answer.\n"
      "# TYPE backoff_service_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < service_buckets_s.size(); ++i) {
    cumulative += s.service_counts[i];
    out += fmt::format("backoff_service_seconds_bucket{{le=\"{}\"}} {}\n", service_buckets_s[i],
                       cumulative);
  }
  cumulative += s.service_counts.back();
  out += fmt::format("backoff_service_seconds_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("backoff_service_seconds_sum {}\n", s.service_sum_s);
  out += fmt::format("backoff_service_seconds_count {}\n", cumulative);
  return out;
}

}  // namespace backoff::net
