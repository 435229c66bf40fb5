// SPDX-License-Identifier: Apache-2.0
// The AIMD window: how many requests a client keeps outstanding at once, grown on successes and
// cut on errors like TCP's congestion window, so that one client with many requests finds and
// stays just below the rate a server sustains (AEONCASE, "Improve on exponential backoff", 2019).
// Where exponential backoff spaces out the retries of one request, the window paces all of them.
//
//   backoff::aimd_window window{backoff::parse_window("aimd(decrease=0.9, variant=reno)")};
//   const auto first = window.enqueue(jobs.size());     // ids first, first + 1, ...
//   // whenever work is enqueued or a response arrives:
//   while (auto ticket = window.try_send()) start(jobs[ticket->request() - first], *ticket);
//   // when a response to `ticket` arrives:
//   if (ok) window.on_success(ticket);
//   else window.on_error(ticket);                        // the request goes back to the front
//   // or, when the operation gives up: window.on_error(ticket, aimd_window::requeue::no);
//
// The algorithm, exactly as the article states it: cwnd starts at `initial` (20),
// ssthresh at 1024; a queue holds the pending requests; `flying` is the set of requests sent
// and not yet answered, `ignored` a set of request ids, empty at first.
//   - Send (front of the queue first) while size(flying) < cwnd.
//   - On a success, with f = size(flying) counted before the request leaves it:
//       cwnd = max(cwnd, min(f + 1, cwnd + 1))          if f < ssthresh   (slow start)
//       cwnd = max(cwnd, min(f + 1, cwnd + 1/cwnd))     otherwise         (congestion avoidance)
//     (counted after removal, f + 1 <= cwnd and the window would never grow; the article's 25 s
//     and about 2085 attempts need the count before it.)
//   - On an error of a request that is not in `ignored` (a "cut"):
//       ssthresh = cwnd * decrease;  cwnd = initial (Tahoe) or ssthresh (Reno);
//       ignored = a copy of flying.
//     An error of an ignored request changes nothing: a burst of errors from the requests that
//     were outstanding together counts once. Either way the request goes back to the front of
//     the queue (unless its operation gives up: requeue::no).
//
// Readings where the article is silent (tests pin each down):
//   - Ids name requests, not sends: a request keeps its id when it is sent again, as the article's
//     queue puts "the request" back. So a request that was in flight at the last cut stays
//     ignored on its later sends until the next cut, because `ignored` is a copy, not a view.
//   - The request whose error makes the cut is itself in the copy. We read the article's success
//     rule as looking at `flying` before the answered id leaves it; read the same way, the
//     error rule copies `flying` with the failing id still in it. So its own next error,
//     before another cut, is ignored as well.
//   - cwnd never goes below 1, TCP's loss window of one segment (RFC 5681). The article has no
//     floor, and with Reno a cut of a window below 2 would leave cwnd below 1. Any cwnd in
//     (0, 1] lets exactly one request fly, so sending is the same; only the regrowth after it
//     can differ (1 + 1/1 instead of c + 1/c when two or more requests still fly).
//
// No sets are stored: the cuts are numbered, and each send carries in its ticket the number of
// cuts made before it and the last cut at which an earlier send of the same request was in
// flight. That decides "is this request in ignored" exactly as the copy would (the proof is in
// aimd_window::on_error), so every operation is O(1) and allocates nothing in steady state; the
// queue is a counter of never-sent ids plus a stack of failed ones (which keeps its memory).
//
// Thread-safe: every member takes a spin lock (detail/spin_lock.hpp) around a few dozen
// instructions in which nothing waits; try_send + on_success cost about 6 ns with it and 16 ns
// with a std::mutex (bench/overload_bench.cpp). Each ticket must be reported exactly once, by
// on_success or on_error.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/detail/spin_lock.hpp"
#include "backoff/export.hpp"

namespace backoff {

enum class aimd_variant : std::uint8_t {
  tahoe,  // after a cut, cwnd = initial
  reno,   // after a cut, cwnd = ssthresh
};

BACKOFF_EXPORT std::string_view to_string(aimd_variant v) noexcept;

// The window's configuration; the defaults are the article's starting values with its first
// factor (0.5) and TCP Tahoe, the variant its congestion-window figure shows.
struct BACKOFF_EXPORT aimd_config {
  double initial = 20.0;     // cwnd at the start and after a Tahoe cut; at least 1
  double ssthresh = 1024.0;  // the starting slow-start threshold; positive
  double decrease = 0.5;     // ssthresh = cwnd * decrease on a cut; in (0, 1)
  aimd_variant variant = aimd_variant::tahoe;

  // Throws parse_error with one line naming the bad value.
  void validate() const;
  // The canonical spec text: "aimd(initial=20, ssthresh=1024, decrease=0.5, variant=tahoe)";
  // parse_window(c.to_string()) == c.
  std::string to_string() const;

  friend bool operator==(const aimd_config&, const aimd_config&) = default;
};

// Reads "aimd(initial=20, ssthresh=1024, decrease=0.9, variant=reno)"; every key is optional.
// Throws parse_error with one line that quotes the spec and names the bad part.
BACKOFF_EXPORT aimd_config parse_window(std::string_view text);

// A request's id: the window numbers requests from 0 in the order they are enqueued.
using request_id = std::uint64_t;

// One send of one request, as try_send hands it out; give it back to on_success or on_error.
class send_ticket {
 public:
  request_id request() const noexcept { return request_; }

  friend bool operator==(const send_ticket&, const send_ticket&) = default;

 private:
  friend class aimd_window;
  send_ticket(request_id request, std::uint64_t cuts_before, std::uint64_t last_cut_in_flight)
      : request_(request), cuts_before_(cuts_before), last_cut_in_flight_(last_cut_in_flight) {}

  request_id request_;
  std::uint64_t cuts_before_;  // cuts made before this send
  std::uint64_t
      last_cut_in_flight_;  // the last cut an earlier send of it was in flight at; 0: none
};

class BACKOFF_EXPORT aimd_window {
 public:
  // Everything at one moment, read under one lock (for reports and time series).
  struct state {
    double cwnd;
    double ssthresh;
    std::size_t flying;     // sent, not yet answered
    std::uint64_t pending;  // queued, not sent
    std::uint64_t cuts;     // errors that cut the window
    std::uint64_t ignored;  // errors ignored because their request was in `ignored`
  };

  explicit aimd_window(const aimd_config& config = {});
  // Copies take the other window's state under its lock.
  aimd_window(const aimd_window& other);
  aimd_window& operator=(const aimd_window& other);

  // Appends n requests to the back of the queue; returns the id of the first (ids are
  // consecutive). Allocates nothing.
  request_id enqueue(std::uint64_t n = 1) noexcept {
    std::lock_guard guard{lock_};
    const request_id first = next_id_;
    next_id_ += n;
    return first;
  }

  // The request to send now, from the front of the queue, if the window has room
  // (size(flying) < cwnd) and the queue is not empty; it is then in flight.
  std::optional<send_ticket> try_send() noexcept {
    std::lock_guard guard{lock_};
    if (!(static_cast<double>(flying_) < cwnd_)) return std::nullopt;
    if (!failed_.empty()) {
      const failed_request r = failed_.back();
      failed_.pop_back();
      ++flying_;
      return send_ticket{r.request, cuts_, r.last_cut_in_flight};
    }
    if (next_fresh_ == next_id_) return std::nullopt;
    ++flying_;
    return send_ticket{next_fresh_++, cuts_, 0};
  }

  // The send succeeded: the window grows (see the header comment) and the request is done.
  void on_success(const send_ticket& ticket) noexcept {
    static_cast<void>(ticket);  // a success needs nothing from the ticket but its end
    std::lock_guard guard{lock_};
    const double f = static_cast<double>(flying_);  // before the request leaves `flying`
    const double step = f < ssthresh_ ? 1.0 : 1.0 / cwnd_;
    cwnd_ = std::max(cwnd_, std::min(f + 1.0, cwnd_ + step));
    if (flying_ > 0) --flying_;
  }

  // Whether a failed request goes back to the queue (the article) or is dropped, because its
  // operation gives up (attempts exhausted, a permanent error, a budget that refuses).
  enum class requeue : bool { no, yes };

  // The send failed: the window is cut unless the request is ignored, and the request goes
  // back to the front of the queue (with requeue::no it is dropped; the cut is the same). May
  // allocate when more requests wait for a resend than ever before (the stack keeps its memory).
  void on_error(const send_ticket& ticket, requeue again = requeue::yes);

  // The ignore rule of on_error, as a pure function for those that mirror the window (the Asio
  // async_window decides which waiting turn to wake by it): an error on a send made after
  // `cuts_before` cuts, of a request whose earlier send was last in flight at cut
  // `last_cut_in_flight` (0: never), is ignored when `cuts` cuts have been made iff the request
  // was in flight at the last cut. last_cut_seen is that cut number with this send included.
  static constexpr std::uint64_t last_cut_seen(std::uint64_t cuts_before,
                                               std::uint64_t last_cut_in_flight,
                                               std::uint64_t cuts) noexcept {
    return cuts_before < cuts ? cuts : last_cut_in_flight;
  }
  static constexpr bool error_ignored(std::uint64_t cuts_before, std::uint64_t last_cut_in_flight,
                                      std::uint64_t cuts) noexcept {
    return cuts > 0 && last_cut_seen(cuts_before, last_cut_in_flight, cuts) == cuts;
  }

  double cwnd() const noexcept {
    std::lock_guard guard{lock_};
    return cwnd_;
  }
  double ssthresh() const noexcept {
    std::lock_guard guard{lock_};
    return ssthresh_;
  }
  std::size_t flying() const noexcept {
    std::lock_guard guard{lock_};
    return flying_;
  }
  std::uint64_t pending() const noexcept {
    std::lock_guard guard{lock_};
    return pending_locked();
  }
  state snapshot() const noexcept;

  const aimd_config& config() const noexcept { return config_; }

 private:
  struct failed_request {
    request_id request;
    std::uint64_t last_cut_in_flight;
  };

  std::uint64_t pending_locked() const noexcept {
    return failed_.size() + (next_id_ - next_fresh_);
  }

  aimd_config config_;
  mutable detail::spin_lock lock_;
  double cwnd_;
  double ssthresh_;
  std::size_t flying_ = 0;
  std::uint64_t cuts_ = 0;
  std::uint64_t ignored_errors_ = 0;
  request_id next_id_ = 0;     // the id the next enqueued request gets
  request_id next_fresh_ = 0;  // the oldest never-sent request; [next_fresh_, next_id_) wait
  std::vector<failed_request> failed_;  // failed requests awaiting a resend; back() is the front
};

}  // namespace backoff
