// SPDX-License-Identifier: Apache-2.0
// The retry tool's share of the process's descriptors (RLIMIT_NOFILE) and processes: how many
// commands may run at once, and what an attempt does when it still cannot get what it needs.
//
//   const descriptor_budget b = current_descriptor_budget();
//   const std::size_t at_once = b.commands_at_once(descriptors_per_attempt(options));
//
//   for (;;) {                                  // starting one attempt
//     attempt_slot slot;                        // counts as running while it lives
//     try { return start_and_run(); }
//     catch (const start_shortage&) {
//       if (!slot.wait_after_shortage(scope, kill_at)) throw;   // nothing else runs: give up
//     }                                         // another attempt ended: try again
//   }
//
// A running attempt holds two descriptors of this process (the child's pidfd and the eventfd that
// a cancellation pokes), one more with --stdout-on-success (its spool) and one more with
// --replay-stdin (its reader). Inspecting a process group (group_alive) takes one descriptor at a
// time for the whole process, under a lock (process.cpp): it is part of the reserve.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

#include "backoff/duration.hpp"
#include "cancel_scope.hpp"

namespace backoff::tool {

// An attempt could not be started for want of a resource: a descriptor (EMFILE, ENFILE), a process
// (EAGAIN) or memory (ENOMEM). Nothing was started; trying again once another attempt has ended
// may work. Never a fact about the command (it is not "cannot run": 126).
class start_shortage : public std::system_error {
 public:
  using std::system_error::system_error;
};

// EMFILE, ENFILE, EAGAIN, ENOMEM: the errors that say "not now", not "never".
bool is_shortage(int error) noexcept;

// Throws start_shortage when `error` is a shortage, else std::system_error.
[[noreturn]] void throw_start_error(int error, const std::string& what);

// Throws the tool's error (std::runtime_error) for giving up on a start: "cannot start 'PROGRAM':
// eventfd: Too many open files (no descriptor left below the limit, ulimit -n 64, and no other
// command was running to free one)".
[[noreturn]] void throw_gave_up(const start_shortage& e, const std::string& program);

struct descriptor_budget {
  std::size_t limit = 0;    // RLIMIT_NOFILE, the soft limit: descriptors are numbered below it
  std::size_t open = 0;     // descriptors open now below the limit
  std::size_t reserve = 0;  // kept for the tool itself (the report, /proc, libraries)

  std::size_t available() const noexcept {
    return limit > open + reserve ? limit - open - reserve : 0;
  }
  // How many attempts that need `per_attempt` descriptors each fit: at least 1 (that one may still
  // fail to start, and then says why).
  std::size_t commands_at_once(std::size_t per_attempt) const noexcept;
};

// Reads the soft limit and counts the open descriptors (through /proc/self/fd, or by probing each
// number when /proc cannot be read). The reserve is 16, or a quarter of what is free when less
// than 64 are.
descriptor_budget current_descriptor_budget();

// The descriptors one running attempt of `backoff try`, forany or forall holds.
std::size_t descriptors_per_attempt(bool stdout_on_success, bool replay_stdin) noexcept;

// An attempt that holds (or is about to hold) descriptors, counted process-wide while the object
// lives, so that an attempt that could not start can wait for another to end. Nested slots in one
// thread count once: the outermost decides whether to wait.
class attempt_slot {
 public:
  attempt_slot();
  ~attempt_slot();
  attempt_slot(const attempt_slot&) = delete;
  attempt_slot& operator=(const attempt_slot&) = delete;

  // Whether this is the outermost slot of its thread (an inner one leaves the decision to it).
  bool outermost() const noexcept { return outermost_; }

  // After a start_shortage: this attempt stops counting as running, and waits until another
  // attempt of this process ends (true: try again), or until none is left running, the scope is
  // cancelled or `until` (a steady time) comes (false). The caller then re-enters with a new slot.
  bool wait_after_shortage(const cancel_scope& scope, std::optional<duration> until);

 private:
  bool outermost_ = false;
  bool counted_ = false;
  std::uint64_t seen_ends_ = 0;  // attempts ended before this one started
};

}  // namespace backoff::tool
