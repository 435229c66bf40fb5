// SPDX-License-Identifier: Apache-2.0
// run_tasks (sim/run/task_pool.hpp): what ran after a stop or an error is what would have run
// with the tasks in turn, whatever the threads: every task below the first failure, none above,
// and an error only when no task below it stopped.
#include "sim/run/task_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace {

namespace sim = backoff::sim;

sim::run_stopped a_stop() {
  return sim::run_stopped(backoff::report::stop_reason::instant_limit, 5, 10, 0, 0);
}

// A flag one task raises and another waits for (bounded: a broken pool fails, never hangs).
struct signal_flag {
  std::mutex lock;
  std::condition_variable raised;
  bool up = false;
  void raise() {
    const std::scoped_lock hold(lock);
    up = true;
    raised.notify_all();
  }
  bool wait() {
    std::unique_lock hold(lock);
    return raised.wait_for(hold, std::chrono::seconds(30), [&] { return up; });
  }
};

TEST(TaskPool, ATaskBelowAStopRunsAndNoneAboveStarts) {
  // Task 0 waits until task 1 has stopped and the pool has been told, then finishes.
  signal_flag stopped_told;
  std::vector<std::atomic<int>> ran(6);
  std::vector<std::size_t> stops;
  bool waited = false;
  sim::run_tasks(
      ran.size(), 2,
      [&] {
        return [&](std::size_t task) {
          if (task == 0) waited = stopped_told.wait();
          if (task == 1) throw a_stop();
          ran[task] = 1;
        };
      },
      [&](std::size_t task, const sim::run_stopped&) {
        stops.push_back(task);
        stopped_told.raise();
      },
      [](std::size_t) {});
  EXPECT_TRUE(waited);
  EXPECT_EQ(stops, std::vector<std::size_t>{1});
  EXPECT_EQ(ran[0], 1);
  for (std::size_t t = 2; t < ran.size(); ++t) EXPECT_EQ(ran[t], 0) << "task " << t;
}

TEST(TaskPool, AnErrorAboveAStopIsNotThrownOneBelowIs) {
  // Task 1 throws an error; task 0, which waited for that, then stops. In turn, task 0's stop
  // comes first and task 1 never runs: no error.
  for (const bool stop_below : {true, false}) {
    signal_flag error_thrown;
    std::size_t stops = 0;
    const auto run = [&] {
      sim::run_tasks(
          4, 2,
          [&] {
            return [&](std::size_t task) {
              if (task == 0) {
                ASSERT_TRUE(error_thrown.wait());
                if (stop_below) throw a_stop();
              }
              if (task == 1) {
                error_thrown.raise();
                throw std::logic_error("task 1");
              }
            };
          },
          [&](std::size_t, const sim::run_stopped&) { ++stops; }, [](std::size_t) {});
    };
    if (stop_below) {
      EXPECT_NO_THROW(run());
      EXPECT_EQ(stops, 1u);
    } else {
      EXPECT_THROW(run(), std::logic_error);
      EXPECT_EQ(stops, 0u);
    }
  }
}

}  // namespace
