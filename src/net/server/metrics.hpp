// SPDX-License-Identifier: Apache-2.0
// What `backoff serve` counts, updated from every server thread without locks, and its
// Prometheus text exposition for `GET /metrics`:
//
//   server_metrics m;
//   m.answered(200);  m.observe_service(120ms);
//   std::string text = prometheus_text(m.snapshot());
//
// Names follow Prometheus conventions (`_total` counters, `_seconds` units, a cumulative
// histogram with `le` buckets).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "backoff/duration.hpp"
#include "faults/faults.hpp"

namespace backoff::net {

// Upper bounds of the service-time histogram, in seconds (the +Inf bucket is implied).
inline constexpr std::array<double, 13> service_buckets_s = {0.025, 0.05, 0.1, 0.2, 0.5, 1,  2,
                                                             5,     10,   30,  60,  120, 300};

struct metrics_snapshot {
  std::int64_t concurrency = 0;  // /api requests being served (abandoned ones included)
  std::int64_t connections = 0;  // open client connections
  bool paused = false;
  std::uint64_t ok = 0, rejected = 0, bad_request = 0, not_found = 0, not_allowed = 0;
  std::uint64_t unauthorized = 0, forbidden = 0, request_timeout = 0;  // 401, 403, 408
  // Connections the server closed: a request's header too slow (--header-timeout), a kept-alive
  // connection idle too long (--idle-timeout), an answer the client did not read (the header
  // timeout again), an idle one closed to make room for a new one at --max-connections, and new
  // ones refused there.
  std::uint64_t header_timeouts = 0, idle_timeouts = 0, write_timeouts = 0, evicted = 0,
                refused = 0;
  std::uint64_t abandoned =
      0;  // requests dropped because their client left (--cancel-on-disconnect)
  std::uint64_t pauses = 0;
  // /api requests whose propagated deadline (grpc-timeout, x-envoy-expected-rq-timeout-ms) had
  // passed: before their service started (dropped at --expired-cost of it), or during it.
  std::uint64_t expired_before_service = 0, expired_in_service = 0;
  std::uint64_t gateway_timeout = 0;  // 504: the answer to an expired request (or a fault's)
  // Answers of any other status, index status - 100 (an injected fault's 500, 502, 418, ...).
  std::array<std::uint64_t, 500> other_statuses{};
  // Faults that fired (faults.hpp), by fault_counter.
  std::array<std::uint64_t, faults::fault_counter_count> faults{};
  std::int64_t last_delay_ns = 0;
  std::array<std::uint64_t, service_buckets_s.size() + 1> service_counts{};  // not cumulative
  double service_sum_s = 0;
  int reject_status = 503;
  // A service of a system file (serve --system, tier.hpp): requests held (queued, served, or
  // waiting), in service, waiting for a worker; workers now (-1: no limit); the admission limit
  // now (-1: none); and requests turned away, by server_metrics::shed_reason.
  bool tier = false;
  std::int64_t tier_held = 0, tier_in_service = 0, tier_queued = 0, tier_workers = -1,
               tier_admission_limit = -1;
  std::array<std::uint64_t, 4> tier_shed{};
};

class server_metrics {
 public:
  void answered(int status) noexcept;
  void observe_service(duration d) noexcept;
  void paused(bool on) noexcept;
  void abandoned() noexcept { abandoned_.fetch_add(1, std::memory_order_relaxed); }
  enum class expiry { before_service, in_service };
  void expired(expiry when) noexcept;
  enum class close_reason { header_timeout, idle_timeout, write_timeout, evicted, refused };
  void closed(close_reason why) noexcept;
  // The kinds of fault that fired for one request: fault_decision::fired.
  void faults_fired(unsigned fired) noexcept;
  // Why a tier turned a request away: its accept limit (the connection reset), its admission
  // limit, a full queue, or CoDel's drop (metrics_snapshot::tier_shed, in this order).
  enum class shed_reason { refused, admission, queue_full, codel };
  void shed(shed_reason why) noexcept {
    tier_shed_[static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  }

  std::atomic<std::int64_t> concurrency{0};
  std::atomic<std::int64_t> connections{0};
  std::atomic<std::int64_t> last_delay_ns{0};

  metrics_snapshot snapshot() const noexcept;
  int reject_status = 503;  // set once before the server starts
  bool tier = false;        // set once before the server starts: it serves a system's service
  // A tier's gauges, set by its thread after each change (metrics_snapshot says what they are).
  std::atomic<std::int64_t> tier_held{0}, tier_in_service{0}, tier_queued{0}, tier_workers{-1},
      tier_admission_limit{-1};

 private:
  std::atomic<bool> paused_{false};
  std::atomic<std::uint64_t> ok_{0}, rejected_{0}, bad_request_{0}, not_found_{0}, not_allowed_{0},
      abandoned_{0}, pauses_{0}, unauthorized_{0}, forbidden_{0}, request_timeout_{0},
      gateway_timeout_{0};
  std::array<std::atomic<std::uint64_t>, 2> expired_{};
  std::array<std::atomic<std::uint64_t>, 5> closed_{};
  std::array<std::atomic<std::uint64_t>, 500> other_statuses_{};
  std::array<std::atomic<std::uint64_t>, faults::fault_counter_count> faults_{};
  std::array<std::atomic<std::uint64_t>, service_buckets_s.size() + 1> service_counts_{};
  std::atomic<std::int64_t> service_sum_ns_{0};
  std::array<std::atomic<std::uint64_t>, 4> tier_shed_{};
};

std::string prometheus_text(const metrics_snapshot& s);

}  // namespace backoff::net
