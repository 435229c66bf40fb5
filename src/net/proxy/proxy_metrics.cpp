// SPDX-License-Identifier: Apache-2.0
// What the proxy counts (proxy.hpp: proxy_metrics) and its Prometheus text for GET /metrics.
#include <array>
#include <string>

#include "backoff/prometheus_text.hpp"
#include "net/common/metric_families.hpp"
#include "net/proxy/proxy.hpp"

namespace backoff::net {

std::string_view upstream_error_name(upstream_error e) noexcept {
  // In the enum's order; the label values of backoff_proxy_upstream_errors_total.
  static constexpr std::array<std::string_view, upstream_error_count> names{
      "refused", "timeout", "bad_response", "reset"};
  const auto i = static_cast<std::size_t>(e);
  return i < names.size() ? names[i] : "unknown";
}

void proxy_metrics::answered(int status) noexcept {
  if (status >= 100 && status <= 599) {
    statuses_[static_cast<std::size_t>(status - 100)].fetch_add(1, std::memory_order_relaxed);
  }
}
void proxy_metrics::upstream_failed(upstream_error e) noexcept {
  upstream_[static_cast<std::size_t>(e)].fetch_add(1, std::memory_order_relaxed);
}
void proxy_metrics::faults_fired(unsigned fired_bits) noexcept {
  for (unsigned c = 0; c < faults::fault_counter_count; ++c) {
    if ((fired_bits & (1U << c)) != 0) faults_[c].fetch_add(1, std::memory_order_relaxed);
  }
}
void proxy_metrics::toxics_applied(unsigned applied_bits) noexcept {
  for (unsigned k = 0; k < toxic_kind_count; ++k) {
    if ((applied_bits & (1U << k)) != 0) toxics_[k].fetch_add(1, std::memory_order_relaxed);
  }
}
void proxy_metrics::relayed(toxic_stream s, std::uint64_t bytes) noexcept {
  bytes_[static_cast<std::size_t>(s)].fetch_add(bytes, std::memory_order_relaxed);
}
std::uint64_t proxy_metrics::requests(int status) const noexcept {
  return status >= 100 && status <= 599 ? statuses_[static_cast<std::size_t>(status - 100)].load()
                                        : 0;
}
std::uint64_t proxy_metrics::upstream_errors(upstream_error e) const noexcept {
  return upstream_[static_cast<std::size_t>(e)].load();
}
std::uint64_t proxy_metrics::faults(faults::fault_counter c) const noexcept {
  return faults_[c].load();
}
std::uint64_t proxy_metrics::toxics(toxic_kind k) const noexcept {
  return toxics_[static_cast<std::size_t>(k)].load();
}
std::uint64_t proxy_metrics::bytes(toxic_stream s) const noexcept {
  return bytes_[static_cast<std::size_t>(s)].load();
}

std::string prometheus_text(const proxy_metrics& m) {
  prometheus_writer out;
  out.family("backoff_proxy_requests_total", prometheus_type::counter,
             "Answers the proxy gave its clients (relayed or its own), by HTTP status.");
  for (int status = 100; status <= 599; ++status) {
    if (const std::uint64_t n = m.requests(status); n != 0) {
      out.sample("backoff_proxy_requests_total", {{"status", std::to_string(status)}}, n);
    }
  }
  counter_by_kind<upstream_error>(
      out, "backoff_proxy_upstream_errors_total",
      "Upstream failures: refused (no connection), timeout (no answer in --upstream-timeout), "
      "bad_response (an answer that does not parse), reset (closed or reset mid-exchange).",
      "kind", upstream_error_count, upstream_error_name,
      [&](upstream_error e) { return m.upstream_errors(e); });
  counter_by_kind<faults::fault_counter>(
      out, "backoff_proxy_faults_total",
      "Requests a fault was injected into, by kind (docs/NETWORK.md, Faults on demand).", "fault",
      faults::fault_counter_count, faults::fault_counter_name,
      [&](faults::fault_counter c) { return m.faults(c); });
  counter_by_kind<toxic_kind>(
      out, "backoff_proxy_toxics_total",
      "Client connections a toxic applied to (after its toxicity draw), by kind.", "toxic",
      toxic_kind_count, toxic_kind_name, [&](toxic_kind k) { return m.toxics(k); });
  out.family("backoff_proxy_bytes_total", prometheus_type::counter,
             "Bytes relayed: downstream toward the clients, upstream toward the server.");
  out.sample("backoff_proxy_bytes_total", {{"stream", "downstream"}},
             m.bytes(toxic_stream::downstream));
  out.sample("backoff_proxy_bytes_total", {{"stream", "upstream"}},
             m.bytes(toxic_stream::upstream));
  out.counter("backoff_proxy_connections_total", "Client connections accepted.",
              std::uint64_t{m.connections_total.load()});
  out.counter("backoff_proxy_refused_connections_total",
              "Client connections closed at once: the proxy held its maximum.",
              std::uint64_t{m.connections_refused.load()});
  out.counter("backoff_proxy_evicted_connections_total",
              "Client connections closed to make room for a new one at the maximum: the one that "
              "had waited longest for a request (idle, or its header begun and not finished).",
              std::uint64_t{m.connections_evicted.load()});
  out.gauge("backoff_proxy_connections", "Open client connections.",
            static_cast<double>(m.connections.load()));
  return out.take();
}

}  // namespace backoff::net
