// SPDX-License-Identifier: Apache-2.0
// The exit statuses of the `backoff` commands and of the retry tool (docs/EXIT_CODES.md), named
// once here for both: src/cli and src/tool may each include src/config, and neither may reach the
// other's internals (tests/layering/check_layers.cmake). Header-only, without toml++, so that the
// statically linked backoff-try can use it.
//
//   if (stopped_by) return backoff::config::status_of_signal(stopped_by);  // SIGINT: 130
//   if (bad_flag) return backoff::config::exit_usage;                      // 2
#pragma once

namespace backoff::config {

inline constexpr int exit_ok = 0;
// The work itself failed (an output not writable, a memory limit, a port not listened on).
inline constexpr int exit_failure = 1;
// A usage mistake in delays, presets, sim, sweep, serve, load, proxy: a bad flag, policy spec,
// duration or scenario.
inline constexpr int exit_usage = 2;

// The retry tool passes its command's status through, so its own outcomes take GNU timeout's
// statuses, which a command rarely gives.
inline constexpr int exit_timed_out = 124;
inline constexpr int exit_tool_error = 125;  // its usage mistakes too, never taken for 2
inline constexpr int exit_not_executable = 126;
inline constexpr int exit_not_found = 127;

// 128 + n: died of, or stopped by, signal n, as a shell reports it.
inline constexpr int exit_signal_base = 128;
constexpr int status_of_signal(int signo) {
  return exit_signal_base + signo;
}

}  // namespace backoff::config
