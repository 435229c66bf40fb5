// SPDX-License-Identifier: Apache-2.0
// Ctrl-C and kill for the retry tool: while a watcher lives, SIGINT, SIGTERM, SIGHUP and SIGQUIT
// sent to `backoff` cancel a scope (with that signal) instead of killing the tool, so it can stop
// retrying, pass the signal on to the running attempt's process group and clean it up first (the
// ftsh pattern; most retry tools just die and leave the child running).
//
//   cancel_scope run;
//   signal_watcher watcher(run);        // before starting any other thread
//   ... run_try(options, command, run, rng) ...
//   if (run.cancelled()) return 128 + run.signal();
//
// The signals are blocked in the constructing thread (so in every thread started after it) and
// read from a signalfd by a thread of the watcher; children start with an empty mask.
#pragma once

#include <pthread.h>

#include "cancel_scope.hpp"

namespace backoff::tool {

class signal_watcher {
 public:
  explicit signal_watcher(cancel_scope& scope);
  signal_watcher(const signal_watcher&) = delete;
  signal_watcher& operator=(const signal_watcher&) = delete;
  ~signal_watcher();

 private:
  static void* watch(void* self);

  cancel_scope& scope_;
  int signal_fd_ = -1;
  int quit_fd_ = -1;
  pthread_t thread_{};
};

}  // namespace backoff::tool
