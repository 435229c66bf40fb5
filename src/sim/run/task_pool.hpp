// SPDX-License-Identifier: Apache-2.0
// Independent tasks on a few threads, the caller's among them: how a sweep runs its runs, a
// metastable map its loads and a plain run its strategies. Each task is claimed once, in index
// order. A task that throws run_stopped (a guard's stop: Ctrl-C, the memory limit, a run stuck at
// one instant) is not an error: `stopped` is told, and keeps what it needs. Any other exception is
// kept from the task of the lowest index and rethrown once every thread has joined, unless a task
// of a lower index stopped (the tasks run in turn would have stopped there first), so what a user
// sees does not depend on the thread count. After a stop or an error at task k no task above k
// starts, and every task below k runs (one claimed before k failed still runs): what ran is always
// every task below the first failure, as when the tasks run in turn.
//
//   run_tasks(tasks.size(), threads,
//             [&] { return [&, state = my_state{}](std::size_t i) mutable { ... }; },
//             [&](std::size_t i, const run_stopped& s) { ... },   // under the pool's lock
//             [&](std::size_t finished) { ... });                 // under the lock, per task
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "sim/engine/guard.hpp"

namespace backoff::sim {

// `make_worker()` gives each thread its callable `void(std::size_t task)` (a worker may keep state
// between its tasks, such as the model of the sweep point it is on).
template <class MakeWorker, class OnStop, class OnDone>
void run_tasks(std::size_t count, unsigned threads, MakeWorker make_worker, OnStop stopped,
               OnDone finished) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> first_failed{none};  // the lowest task that stopped or threw
  std::mutex lock;
  std::exception_ptr error;
  std::size_t error_task = none, stop_task = none;
  std::size_t done = 0;
  const auto failed_at = [&](std::size_t task) {  // under the lock
    if (task < first_failed.load()) first_failed.store(task);
  };
  const auto work = [&] {
    auto run = make_worker();
    for (;;) {
      const std::size_t task = next.fetch_add(1);
      if (task >= count || task > first_failed.load()) return;
      try {
        run(task);
      } catch (const run_stopped& stop) {
        const std::scoped_lock hold(lock);
        failed_at(task);  // first: no task above starts once `stopped` is told
        stop_task = std::min(stop_task, task);
        stopped(task, stop);
        return;
      } catch (...) {
        const std::scoped_lock hold(lock);
        if (task < error_task) {
          error = std::current_exception();
          error_task = task;
        }
        failed_at(task);
        return;
      }
      const std::scoped_lock hold(lock);
      finished(++done);
    }
  };
  threads = std::max(1U, threads);
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error && error_task < stop_task) std::rethrow_exception(error);
}

}  // namespace backoff::sim
