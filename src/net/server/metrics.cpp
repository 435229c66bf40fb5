// SPDX-License-Identifier: Apache-2.0
#include "metrics.hpp"

#include <array>
#include <string>
#include <string_view>

#include "backoff/prometheus_text.hpp"
#include "net/common/metric_families.hpp"

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
  for (unsigned c = 0; c < faults::fault_counter_count; ++c) {
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
  s.tier = tier;
  s.tier_held = tier_held.load();
  s.tier_in_service = tier_in_service.load();
  s.tier_queued = tier_queued.load();
  s.tier_workers = tier_workers.load();
  s.tier_admission_limit = tier_admission_limit.load();
  for (std::size_t i = 0; i < tier_shed_.size(); ++i) s.tier_shed[i] = tier_shed_[i];
  return s;
}

namespace {

// A system's service (serve --system): its door, seats and queue, as the simulator reports them.
void tier_text(prometheus_writer& out, const metrics_snapshot& s) {
  out.gauge("backoff_tier_held", "Requests the service holds: queued, in service, or waiting.",
            static_cast<double>(s.tier_held));
  out.gauge("backoff_tier_in_service", "Requests on a worker.",
            static_cast<double>(s.tier_in_service));
  out.gauge("backoff_tier_queue", "Requests waiting for a worker.",
            static_cast<double>(s.tier_queued));
  if (s.tier_workers >= 0) {
    out.gauge("backoff_tier_workers", "Workers now (fewer while a capacity fault lasts).",
              static_cast<double>(s.tier_workers));
  }
  if (s.tier_admission_limit >= 0) {
    out.gauge("backoff_tier_admission_limit", "The admission limit now (service.limit).",
              static_cast<double>(s.tier_admission_limit));
  }
  out.family("backoff_tier_shed_total", prometheus_type::counter,
             "Requests turned away without service: refused at the accept limit (connection "
             "reset), shed by admission, by a full queue, or by CoDel.");
  constexpr std::array<std::string_view, 4> reasons = {"refused", "admission", "queue_full",
                                                       "codel"};
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    out.sample("backoff_tier_shed_total", {{"reason", reasons[i]}}, s.tier_shed[i]);
  }
}

}  // namespace

std::string prometheus_text(const metrics_snapshot& s) {
  prometheus_writer out;
  out.family("backoff_requests_total", prometheus_type::counter,
             "Requests answered, by HTTP status.");
  const auto answered = [&](std::string_view status, std::uint64_t n) {
    out.sample("backoff_requests_total", {{"status", status}}, n);
  };
  answered("200", s.ok);
  answered(std::to_string(s.reject_status), s.rejected);
  answered("400", s.bad_request);
  answered("404", s.not_found);
  answered("405", s.not_allowed);
  answered("401", s.unauthorized);
  answered("403", s.forbidden);
  answered("408", s.request_timeout);
  answered("504", s.gateway_timeout);
  for (std::size_t i = 0; i < s.other_statuses.size(); ++i) {
    if (s.other_statuses[i] != 0) answered(std::to_string(i + 100), s.other_statuses[i]);
  }
  counter_by_kind<faults::fault_counter>(
      out, "backoff_faults_total",
      "Requests to /api a fault was injected into, by kind (docs/NETWORK.md, Faults on demand).",
      "fault", faults::fault_counter_count, faults::fault_counter_name,
      [&](faults::fault_counter c) { return s.faults[static_cast<std::size_t>(c)]; });
  out.family("backoff_closed_connections_total", prometheus_type::counter,
             "Connections the server closed: header, idle or write timeout, an idle or half-sent "
             "one evicted for a new one at --max-connections, a new one refused there.");
  const auto closed = [&](std::string_view reason, std::uint64_t n) {
    out.sample("backoff_closed_connections_total", {{"reason", reason}}, n);
  };
  closed("header_timeout", s.header_timeouts);
  closed("idle_timeout", s.idle_timeouts);
  closed("write_timeout", s.write_timeouts);
  closed("evicted", s.evicted);
  closed("refused", s.refused);
  out.counter("backoff_abandoned_requests_total",
              "Requests dropped because the client disconnected (--cancel-on-disconnect).",
              s.abandoned);
  out.family("backoff_expired_requests_total", prometheus_type::counter,
             "Requests to /api whose propagated deadline had passed, answered 504: before their "
             "service started (served --expired-cost of it), or during it (stopped there).");
  out.sample("backoff_expired_requests_total", {{"stage", "before_service"}},
             s.expired_before_service);
  out.sample("backoff_expired_requests_total", {{"stage", "in_service"}}, s.expired_in_service);
  out.counter("backoff_pauses_total", "Pauses: POST /admin/pause, or a pause fault.", s.pauses);
  out.gauge("backoff_concurrency", "Requests to /api being served, abandoned ones included.",
            static_cast<double>(s.concurrency));
  out.gauge("backoff_connections", "Open client connections.", static_cast<double>(s.connections));
  out.gauge("backoff_paused", "1 while the service is paused.", s.paused ? 1.0 : 0.0);
  out.gauge("backoff_last_delay_seconds", "The service time computed at the latest check.",
            static_cast<double>(s.last_delay_ns) * 1e-9);
  out.histogram("backoff_service_seconds", "Time from the start of an /api request to its answer.",
                service_buckets_s, s.service_counts, s.service_sum_s);
  if (s.tier) tier_text(out, s);
  return out.take();
}

}  // namespace backoff::net
