// SPDX-License-Identifier: Apache-2.0
// An edge's AIMD window (system_runner.hpp; the library's aimd_window, AEONCASE 2019): each caller
// (a client process, or a replica's call downstream) keeps at most cwnd of its calls on that edge
// in flight. A call joins its caller's window queue instead of sending; the window hands out
// tickets while it has room; a failed attempt that may be retried goes back to the front of the
// queue (no backoff: the window is the pacing), one that gives up cuts the window and leaves it.
#include "system_runner.hpp"

namespace backoff::sim::system_model {

void system_runner::enqueue_in_window(engine& e, std::uint32_t c) {
  const std::uint32_t slot = calls_[c].slot;
  const std::uint64_t id = lives_[slot].window->enqueue();
  std::vector<std::uint32_t>& by_id = window_calls_[slot];
  if (by_id.size() <= id) by_id.resize(id + 1, no_index);
  by_id[id] = c;
  pump_window(e, slot);
}

// Sends from the caller's window queue while the window has room; the gates (budget, breaker)
// still decide each send, and one they refuse ends its call.
void system_runner::pump_window(engine& e, std::uint32_t slot) {
  aimd_window& window = *lives_[slot].window;
  while (auto ticket = window.try_send()) {
    const std::uint32_t c = window_calls_[slot][ticket->request()];
    if (tickets_.size() <= c) tickets_.resize(calls_.size());
    tickets_[c] = *ticket;
    const auto g = calls_[c].control->before_attempt(duration{e.now()}, client_rng_);
    if (!g.send) {
      call_over(e, c, g.stop);
      continue;
    }
    if (g.wait.count() > 0) {
      e.schedule_after(g.wait.count(), self_, send_now, c);
    } else {
      attempt(e, c, true);
    }
  }
}

// The answer to a windowed call's attempt: the window learns it, and sends what it now may.
// A permanent answer ("do not retry") is no overload signal: the server answered, as the
// library's async window counts it.
void system_runner::window_answer(engine& e, std::uint32_t c, verdict_kind kind,
                                  const retry_controller::decision& d) {
  const std::uint32_t slot = calls_[c].slot;
  aimd_window& window = *lives_[slot].window;
  const send_ticket ticket = *tickets_[c];
  tickets_[c].reset();
  if (kind != verdict_kind::retryable) {
    window.on_success(ticket);
    call_over(e, c, kind == verdict_kind::success ? outcome::succeeded : d.stop);
  } else if (!d.retry) {
    window.on_error(ticket, aimd_window::requeue::no);  // a cut, and the call leaves the queue
    call_over(e, c, d.stop);
  } else {
    window.on_error(ticket);  // back to the front of the queue
  }
  pump_window(e, slot);
}

// A windowed call that ends without an answer (refused by its gates, past its deadline) gives
// its ticket back as a failure that leaves the queue.
void system_runner::leave_window(std::uint32_t c) {
  if (c >= tickets_.size() || !tickets_[c]) return;
  lives_[calls_[c].slot].window->on_error(*tickets_[c], aimd_window::requeue::no);
  tickets_[c].reset();
}

}  // namespace backoff::sim::system_model
