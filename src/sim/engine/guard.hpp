// SPDX-License-Identifier: Apache-2.0
// Stops a long simulated run from outside its event loop: on SIGINT or SIGTERM (the CLI's signal
// handler calls request_interrupt) or when the process grows past a memory limit. The runner
// makes each run's engine with its guard and hands the engine to the model; an engine made
// without one (tests, a model's own reference computation) never stops early.
//
//   sim::run_guard guard;
//   guard.memory_limit = 2ULL << 30;
//   sim::engine e(&guard);                       // polls `guard`
//   try { model->run(strategy, seed, e, rec, progress); }
//   catch (const sim::run_stopped& s) { /* s.reason, s.at, s.events */ }
//
// The engine polls every 2^16 events (a mask test per event, nothing more on the hot path); a
// poll reads one atomic, and every fourth one also reads the resident set from /proc/self/statm.
// run_stopped is thrown between two events, so the recorder's figures up to `at` are consistent.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>

#include "engine.hpp"
#include "report/result.hpp"

namespace backoff::sim {

// Thrown out of engine::run_until/run/step (between two events) when the guard says stop.
class run_stopped : public std::runtime_error {
 public:
  run_stopped(report::stop_reason why, time_ns when, std::uint64_t events_done, int signo,
              std::uint64_t resident_bytes);
  report::stop_reason reason;
  time_ns at;              // the engine's time when it stopped, in model units
  std::uint64_t events;    // events the engine had processed
  int signal;              // interrupted: the signal number
  std::uint64_t resident;  // memory: the resident set that was over the limit, in bytes
};

// Async-signal-safe: stores the signal number (the first one wins) for every guard to see.
void request_interrupt(int signo) noexcept;
// The signal asked for, 0 if none.
int interrupt_signal() noexcept;
// Forgets a request (for tests, and a program that goes on after an interrupted run).
void clear_interrupt() noexcept;

// While one lives, a SIGINT or SIGTERM is a request the run polls, so that the outputs it has are
// written, marked partial; while none does (parsing, checking, merging, drawing: nothing to
// save), the signal's default action ends the process at once. The runner holds one from the
// first run to the last output written (on the thread that calls run_scenario). The CLI installs
// its handler through on_deferral(): `begin` runs as the first deferral starts, `end` as the last
// one ends.
class interrupt_deferral {
 public:
  interrupt_deferral() noexcept;
  ~interrupt_deferral();
  interrupt_deferral(const interrupt_deferral&) = delete;
  interrupt_deferral& operator=(const interrupt_deferral&) = delete;
};
// Async-signal-safe.
bool interrupts_deferred() noexcept;
// Sets the hooks of interrupt_deferral (nullptr: none).
void on_deferral(void (*begin)(), void (*end)()) noexcept;

// The process's resident set in bytes (/proc/self/statm), 0 where it cannot be read.
std::uint64_t resident_bytes() noexcept;

struct run_guard {
  // Engines poll every 2^poll_shift events; the resident set is read every fourth poll.
  static constexpr unsigned poll_shift = 16;
  static constexpr std::uint64_t poll_mask = (std::uint64_t{1} << poll_shift) - 1;

  std::uint64_t memory_limit = 0;  // bytes of resident set; 0: no limit
  // Set once a run on any thread went over the limit, so that the other workers of a sweep stop
  // too instead of finishing their runs.
  std::atomic<bool> over_limit{false};

  // Throws run_stopped when interrupted or over the limit.
  void poll(time_ns now, std::uint64_t events);
  // Between runs: throws run_stopped (at time 0, no events) when interrupted or over the limit.
  void check_between_runs();
};

}  // namespace backoff::sim
