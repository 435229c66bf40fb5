// SPDX-License-Identifier: Apache-2.0
// The state of one `backoff load` run, shared by its coroutines on the run's one thread: the
// options, the recorder, the counters, the operations in flight, the open loop's queue of sends
// and the guards all clients share. Internal to the load client (src/net/client); run_load
// (load.cpp) owns it for the run.
//
//   load_state s(options);
//   s.context.emplace(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE);
//   asio::co_spawn(*s.context, client_loop(s, i), asio::detached);  ...  s.context->run();
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backoff/async_window.hpp"
#include "backoff/strategy.hpp"
#include "net/client/connection.hpp"
#include "net/client/load.hpp"
#include "net/client/reply.hpp"
#include "report/hdr_histogram.hpp"
#include "report/recorder.hpp"

namespace backoff::net::load_detail {

// The operations in flight, for their count and, at the end, the unfinished ones: each lives in
// its coroutine's frame, linked into a list while it does (a hash map cost an allocation, a hash
// and three look-ups per operation).
struct in_flight_op;
struct in_flight_list {
  in_flight_op* head = nullptr;
  std::size_t count = 0;
  std::size_t size() const { return count; }
};

struct in_flight_op {
  in_flight_op(in_flight_list& l, std::uint64_t i, report::time_units first,
               report::time_units deadline)
      : id(i), first_attempt(first), deadline_at(deadline), list(&l), next(l.head) {
    if (next != nullptr) next->prev = this;
    l.head = this;
    ++l.count;
  }
  in_flight_op(const in_flight_op&) = delete;
  in_flight_op& operator=(const in_flight_op&) = delete;
  ~in_flight_op() { unlink(); }
  void unlink() {
    if (list == nullptr) return;
    (prev != nullptr ? prev->next : list->head) = next;
    if (next != nullptr) next->prev = prev;
    --list->count;
    list = nullptr;
  }

  std::uint64_t id;                      // from 0, in the order the run's operations start
  report::time_units first_attempt = 0;  // open loop: the intended send time
  // When its first attempt (or hedged copy) left: its later ones tell the server how long ago
  // (x-backoff-since-first-attempt). min(): none has left yet.
  steady::time_point first_sent = steady::time_point::min();
  std::uint32_t attempts = 0;
  report::time_units deadline_at = 0;  // 0: none (request_deadline)
  in_flight_list* list;
  in_flight_op* prev = nullptr;
  in_flight_op* next;
};

// An open-loop send waiting for a connection.
struct queued_send {
  report::time_units intended = 0;
  std::uint64_t seed = 0;
};

// A client's connection and its timer: in the open loop, one of the `connections`, waiting on
// the timer while the queue of sends due is empty (cancelled to wake it); in the closed loop, a
// virtual client, thinking on it.
struct sender {
  explicit sender(const executor_type& ex) : c(ex), wake(ex) {}
  connection c;
  asio::steady_timer wake;
};

// The completed operations' latencies: microseconds at 3 significant digits (up to an hour), the
// interval log's unit and precision (hdr_log.hpp). Each is recorded once, into the current
// interval's histogram; an interval is added into the recorder's (behind the summary's
// percentiles) when it ends, when its line of the log is written or at the end of the run: the
// log and the summary hold the same counts.
inline constexpr std::int64_t latency_highest_us = 3'600'000'000;
inline constexpr report::hdr_precision latency_precision =
    report::hdr_precision::significant_digits(3);

struct load_state {
  explicit load_state(const load_options& o)
      : options(o), recorder(make_recorder_options(o), nullptr) {}

  static report::recorder_options make_recorder_options(const load_options& o);

  report::time_units now() const { return (steady_now() - start).count(); }
  // `t` as now() would have said it (one clock reading for two uses).
  report::time_units since_start(steady::time_point t) const {
    return (std::chrono::duration_cast<duration>(t.time_since_epoch()) - start).count();
  }
  static duration steady_now() {
    return std::chrono::duration_cast<duration>(
        std::chrono::steady_clock::now().time_since_epoch());
  }
  // The run's start on the steady clock, for timers that wake on a grid from it.
  steady::time_point origin() const {
    return steady::time_point(std::chrono::duration_cast<steady::duration>(start));
  }

  const load_options& options;
  report::recorder recorder;
  duration start = steady_now();
  tcp::endpoint endpoint;
  bool stopping = false;
  bool warned_local = false;
  load_counts counts;
  // This interval's completed latencies (above).
  report::hdr_histogram interval_latency{latency_highest_us, latency_precision};
  double histogram_logged_s = 0;  // the end of the last line written
  // The counts when the current report interval began (its line reports the difference).
  load_counts interval_base;
  report::time_units interval_start = 0;
  std::uint64_t next_op = 0;
  in_flight_list in_flight;
  std::string request_text;  // "GET /api HTTP/1.1" with Host, serialized once
  known_replies known;
  strategy::live guards;  // the budget, throttle and breaker all clients share
  std::unique_ptr<async_window> window;
  // Last: destroyed first, with every coroutine frame still in it, while what they refer to lives.
  std::optional<asio::io_context> context;
  // Open loop: the sends due that wait for a connection, and the senders (one connection each,
  // as wrk's -c; they live in their coroutines' frames) waiting for a send.
  std::deque<queued_send> queued;
  std::vector<sender*> idle_senders;
};

}  // namespace backoff::net::load_detail
