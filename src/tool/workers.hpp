// SPDX-License-Identifier: Apache-2.0
// The threads of a forall (`backoff forall`, a script's `forall`): `work` runs on up to `wanted`
// workers at once, this thread one of them, each taking the next item until none is left.
//
//   std::atomic<std::size_t> next{0};
//   run_workers(std::min(jobs, items.size()),
//               [&] { for (std::size_t i; (i = next++) < items.size();) run(items[i]); },
//               [&](std::size_t got, const std::system_error& e) { log(got, e.what()); });
//
// Every thread is made before any work starts. When the system refuses one (EAGAIN: the process
// limit, `ulimit -u`, or no memory for its stack), the forall runs with half the workers it got,
// at least one: a running item needs a process for its command too, and with every task the
// limit allows taken by threads no command could start. The threads beyond that end (and the
// kernel has let go of them) before any work starts, `fewer` is told how many workers there are
// and why, and the items wait their turn (never an error, never a wait for items that started:
// issue 40).
#pragma once

#include <cstddef>
#include <functional>
#include <system_error>

namespace backoff::tool {

// Returns the number of workers that ran `work`.
std::size_t run_workers(std::size_t wanted, const std::function<void()>& work,
                        const std::function<void(std::size_t, const std::system_error&)>& fewer);

}  // namespace backoff::tool
