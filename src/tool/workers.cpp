// SPDX-License-Identifier: Apache-2.0
#include "workers.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace backoff::tool {
namespace {

// This process's thread count (/proc/self/status, "Threads:"); nullopt when it cannot be read.
std::optional<long> thread_count() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::strtol(line.c_str() + 8, nullptr, 10);
  }
  return std::nullopt;
}

// Waits (up to a second) until the kernel has let go of the threads that were joined: a joined
// thread's task is released a moment after pthread_join returns, and until then it still counts
// against the process limit, so the first command would find none left.
void wait_for_threads_released(long at_most) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    const std::optional<long> now = thread_count();
    if (!now || *now <= at_most || std::chrono::steady_clock::now() > until) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

std::size_t run_workers(std::size_t wanted, const std::function<void()>& work,
                        const std::function<void(std::size_t, const std::system_error&)>& fewer) {
  wanted = std::max<std::size_t>(wanted, 1);
  // The gate holds every thread until the number of workers is known, and those that will
  // work until the others have gone.
  struct gate_state {
    std::mutex mutex;
    std::condition_variable changed;
    std::size_t workers = 0;  // 0 while unknown
    bool go = false;          // the workers may start
  } gate;
  // Worker k (1, 2, ...; this thread is worker 0) works if k < the final number of workers.
  const auto body = [&gate, &work](std::size_t k) {
    {
      std::unique_lock lock(gate.mutex);
      gate.changed.wait(lock, [&] { return gate.workers != 0; });
      if (k >= gate.workers) return;
      gate.changed.wait(lock, [&] { return gate.go; });
    }
    work();
  };
  const auto set = [&gate](std::size_t workers, bool go) {
    {
      const std::lock_guard lock(gate.mutex);
      gate.workers = workers;
      gate.go = go;
    }
    gate.changed.notify_all();
  };

  std::vector<std::thread> threads;
  std::optional<std::system_error> refused;
  try {
    threads.reserve(wanted - 1);
  } catch (const std::bad_alloc&) {
    refused.emplace(ENOMEM, std::generic_category(), "no memory for the threads");
  }
  for (std::size_t k = 1; k < wanted && !refused; ++k) {
    try {
      threads.emplace_back(body, k);
    } catch (const std::system_error& e) {
      refused.emplace(e);
    } catch (const std::bad_alloc&) {
      refused.emplace(ENOMEM, std::generic_category(), "no memory for a thread");
    }
  }
  const std::size_t workers = refused ? std::max<std::size_t>(1, (threads.size() + 1) / 2) : wanted;
  if (refused) {
    // The threads that will not work end first, so that their tasks are free for the commands.
    const std::optional<long> before = thread_count();
    set(workers, false);
    for (std::size_t k = workers; k <= threads.size(); ++k) threads[k - 1].join();
    if (before) {
      wait_for_threads_released(*before - static_cast<long>(threads.size() + 1 - workers));
    }
  }
  set(workers, true);
  if (refused) {
    try {
      fewer(workers, *refused);
    } catch (...) {
      for (std::size_t k = 1; k < workers; ++k) threads[k - 1].join();
      throw;
    }
  }
  try {
    work();
  } catch (...) {
    for (std::size_t k = 1; k < workers; ++k) threads[k - 1].join();
    throw;
  }
  for (std::size_t k = 1; k < workers; ++k) threads[k - 1].join();
  return workers;
}

}  // namespace backoff::tool
