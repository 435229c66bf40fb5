// SPDX-License-Identifier: Apache-2.0
// The subcommands of the `backoff` executable. Each lives in its own file with an options
// struct, a setup function that declares its flags on a CLI11 app, and a run function that does
// the work and returns the exit status; main.cpp only wires them together.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

#include "config/exit_status.hpp"

namespace backoff::cli {

// Exit statuses shared by the subcommands, named once for them and the retry tool
// (config/exit_status.hpp, docs/EXIT_CODES.md).
using config::exit_failure;
using config::exit_ok;
using config::exit_usage;
using config::status_of_signal;

// A flag whose empty value would otherwise read as "not given" (--out '' writing nothing, with
// nothing said): `what` is what it needs, as in "a folder".
inline CLI::Validator not_empty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& value) -> std::string {
        return value.empty() ? "needs " + what + ", got an empty value" : std::string();
      },
      "");
}

// Raises the soft limit on open descriptors to the hard one: serve and load hold one per
// connection, and the soak runs 10,000 of them.
inline void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// SIGINT and SIGTERM, blocked in the calling thread so that the threads it starts next inherit
// the mask and a long-running command (serve, proxy) can wait for them with
// wait_for_stop_signal() instead of a handler.
inline sigset_t block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

// Waits for one of `stop_signals` and says so: "backoff serve: Terminated, shutting down".
inline void wait_for_stop_signal(const sigset_t& stop_signals, std::string_view command) {
  int signal = 0;
  ::sigwait(&stop_signals, &signal);
  std::cerr << "backoff " << command << ": " << ::strsignal(signal) << ", shutting down"
            << std::endl;
}

// Each setup_* adds its subcommand to `app` and arranges for `status` to receive its result.
void setup_delays(CLI::App& app, int& status);
void setup_presets(CLI::App& app, int& status);
void setup_sim(CLI::App& app, int& status);
void setup_sweep(CLI::App& app, int& status);
void setup_serve(CLI::App& app, int& status);
void setup_load(CLI::App& app, int& status);
void setup_proxy(CLI::App& app, int& status);

}  // namespace backoff::cli
