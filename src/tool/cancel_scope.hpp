// SPDX-License-Identifier: Apache-2.0
// Who asks a running attempt to stop, and with which signal. The retry tool nests scopes: the whole
// run (stopped by SIGINT/SIGTERM sent to `backoff`), a forall (stopped when a sibling fails), an
// item inside it. Cancelling a scope cancels every scope below it; the signal travels down, so a
// Ctrl-C reaches the attempt's process group as SIGINT and a fail-fast as SIGTERM.
//
//   cancel_scope run;                      // the root
//   cancel_scope branch{run};              // stops when `run` does, or on its own
//   run_attempt(spec, limits, branch);     // watches branch.token()
//   run.cancel(SIGINT);                    // branch.signal() == SIGINT now
#pragma once

#include <atomic>
#include <csignal>
#include <optional>
#include <stop_token>

namespace backoff::tool {

class cancel_scope {
 public:
  cancel_scope() = default;
  explicit cancel_scope(const cancel_scope& parent) {
    link_.emplace(parent.source_.get_token(), forward{this, &parent});
  }
  cancel_scope(cancel_scope&&) = delete;  // the parent's callback points at this object

  // The first call wins; later calls (and the parent's) change nothing.
  void cancel(int signal = SIGTERM) noexcept {
    int none = 0;
    signal_.compare_exchange_strong(none, signal);
    source_.request_stop();
  }
  bool cancelled() const noexcept { return source_.stop_requested(); }
  std::stop_token token() const noexcept { return source_.get_token(); }
  // The signal to send to whatever this scope is running: SIGTERM unless it was set.
  int signal() const noexcept {
    const int s = signal_.load();
    return s == 0 ? SIGTERM : s;
  }

 private:
  struct forward {
    cancel_scope* self;
    const cancel_scope* parent;
    void operator()() const noexcept { self->cancel(parent->signal()); }
  };
  std::stop_source source_;
  std::atomic<int> signal_{0};
  std::optional<std::stop_callback<forward>> link_;
};

}  // namespace backoff::tool
