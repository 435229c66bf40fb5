// SPDX-License-Identifier: Apache-2.0
// The end both `backoff serve` and `backoff proxy` come to once their options are checked: start
// the network service, say where it listens, and run until SIGINT or SIGTERM, then stop it
// gracefully (docs/NETWORK.md).
//
//   return run_until_stop_signal<net::server>("serve", options, options.faults,
//                                              [&](const net::server& s) { return line(s); });
#pragma once

#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "fault_flags.hpp"

namespace backoff::cli {

// `Service` (net::server, net::proxy) binds in its constructor (a std::system_error naming the
// address when it cannot: exit_failure, the message on stderr), then start(), stop(), wait().
// `announce(service)` is the listening line, written in one write: stderr is unbuffered, and
// scripts wait for this line to read the port.
template <class Service, class Options, class Announce>
int run_until_stop_signal(std::string_view command, const Options& options,
                          const faults::fault_plan& faults, Announce announce) {
  // SIGINT and SIGTERM are waited for here, so they must reach no thread of the service: blocked
  // before its threads start (they inherit the mask).
  const sigset_t stop_signals = block_stop_signals();
  try {
    Service service(options);
    service.start();
    // The plan first: scripts and tests read everything said at start once the listening line
    // is there.
    print_fault_plan(faults, command);
    std::cerr << std::string(announce(service)) << std::flush;
    wait_for_stop_signal(stop_signals, command);
    service.stop();
    service.wait();
  } catch (const std::exception& e) {  // std::system_error naming the address, mostly
    std::cerr << "backoff " << command << ": " << e.what() << '\n';
    return exit_failure;
  }
  return exit_ok;
}

}  // namespace backoff::cli
