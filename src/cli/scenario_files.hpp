// SPDX-License-Identifier: Apache-2.0
// What `backoff sim` and `backoff sweep` share: where they find a scenario (a TOML file, or the
// name of a built-in one, scenarios/*.toml compiled in), their --memory-limit, and how Ctrl-C
// stops them (the first SIGINT/SIGTERM stops the run at its next poll, which writes partial
// outputs; a second one exits at once).
//
//   sim::scenario_source s = cli::resolve_scenario("tick-burst");   // or "my/exp.toml"
//   const cli::stop_signals signals("sim");   // while it lives, SIGINT and SIGTERM stop the run
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "sim/engine/guard.hpp"
#include "sim/run/memory.hpp"
#include "sim/scenario/scenario.hpp"

namespace backoff::cli {

// Throws sim::scenario_error naming the built-in scenarios when `arg` is neither.
sim::scenario_source resolve_scenario(const std::string& arg);

// --memory-limit's value in bytes (0: none), as add_size_option read it; not given: the default
// (sim::default_memory_limit).
std::uint64_t memory_limit_or_default(const std::optional<std::uint64_t>& given);

// Runs `body` and turns what a simulation throws into one line on stderr, "WHO: message", and
// the documented status: 2 for a bad scenario or spec, 1 for a memory limit, a chart, a write or
// a file system error.
int simulation_status(const char* who, const std::function<int()>& body);

// A signal came after the last run, while its outputs were written (complete): says so on
// stderr, after the prefix of the command whose stop_signals lives, and gives the status,
// status_of_signal(signo).
int interrupted_after_writing(int signo);

// While it lives, the runner's interrupt deferral (sim::interrupt_deferral: from the first run to
// the last output written) installs the SIGINT and SIGTERM handler, and puts the previous
// dispositions back when it ends: a signal then stops the run, its partial outputs written. At
// any other time (reading, checking, drawing) the default action ends the process at once: no
// handler of ours runs, so none can be held up (a handler cannot run while a sanitizer defers it
// inside a blocking call, e.g. open() of a FIFO nobody writes).
//
// `command` ("sim", "sweep") names the command in the lines said about a signal ("backoff sim:
// interrupted" from the handler when a second signal ends the process at once). One at a time.
class stop_signals {
 public:
  explicit stop_signals(std::string_view command);
  ~stop_signals();
  stop_signals(const stop_signals&) = delete;
  stop_signals& operator=(const stop_signals&) = delete;
};

}  // namespace backoff::cli
