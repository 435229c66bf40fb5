// SPDX-License-Identifier: Apache-2.0
#include "guard.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace backoff::sim {
namespace {

// Lock-free, so that storing from a signal handler is async-signal-safe.
std::atomic<int> interrupt_requested{0};
std::atomic<int> deferrals{0};
std::atomic<void (*)()> deferral_begins{nullptr};
std::atomic<void (*)()> deferral_ends{nullptr};
static_assert(std::atomic<int>::is_always_lock_free);

std::string stop_message(report::stop_reason why, int signo) {
  if (why == report::stop_reason::memory) return "the run went over the memory limit";
  if (why == report::stop_reason::instant_limit) {
    return "the run went over its limit of events at one simulated time";
  }
  return "the run was interrupted (signal " + std::to_string(signo) + ")";
}

}  // namespace

run_stopped::run_stopped(report::stop_reason why, time_ns when, std::uint64_t events_done,
                         int signo, std::uint64_t resident_bytes)
    : std::runtime_error(stop_message(why, signo)),
      reason(why),
      at(when),
      events(events_done),
      signal(signo),
      resident(resident_bytes) {}

void request_interrupt(int signo) noexcept {
  int none = 0;
  interrupt_requested.compare_exchange_strong(none, signo);
}

int interrupt_signal() noexcept {
  return interrupt_requested.load(std::memory_order_relaxed);
}

void clear_interrupt() noexcept {
  interrupt_requested.store(0);
}

interrupt_deferral::interrupt_deferral() noexcept {
  if (deferrals.fetch_add(1) == 0) {
    if (void (*begin)() = deferral_begins.load(); begin != nullptr) begin();
  }
}

interrupt_deferral::~interrupt_deferral() {
  if (deferrals.fetch_sub(1) == 1) {
    if (void (*end)() = deferral_ends.load(); end != nullptr) end();
  }
}

void on_deferral(void (*begin)(), void (*end)()) noexcept {
  deferral_begins.store(begin);
  deferral_ends.store(end);
}

bool interrupts_deferred() noexcept {
  return deferrals.load() > 0;
}

std::uint64_t resident_bytes() noexcept {
  // open/read/close rather than a stream: no allocation, and a few microseconds.
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  // "size resident shared ...", in pages.
  char* end = nullptr;
  (void)std::strtoull(text, &end, 10);
  const unsigned long long pages = std::strtoull(end, nullptr, 10);
  const long page = ::sysconf(_SC_PAGESIZE);
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page > 0 ? page : 4096);
}

void run_guard::poll(time_ns now, std::uint64_t events) {
  if (const int signo = interrupt_signal(); signo != 0) {
    throw run_stopped(report::stop_reason::interrupted, now, events, signo, 0);
  }
  if (memory_limit == 0) return;
  if (over_limit.load(std::memory_order_relaxed)) {
    throw run_stopped(report::stop_reason::memory, now, events, 0, 0);
  }
  if (((events >> poll_shift) & 3) != 0) return;
  if (const std::uint64_t rss = resident_bytes(); rss > memory_limit) {
    over_limit.store(true);
    throw run_stopped(report::stop_reason::memory, now, events, 0, rss);
  }
}

void run_guard::check_between_runs() {
  if (const int signo = interrupt_signal(); signo != 0) {
    throw run_stopped(report::stop_reason::interrupted, 0, 0, signo, 0);
  }
  if (memory_limit == 0) return;
  if (over_limit.load(std::memory_order_relaxed)) {
    throw run_stopped(report::stop_reason::memory, 0, 0, 0, 0);
  }
  if (const std::uint64_t rss = resident_bytes(); rss > memory_limit) {
    over_limit.store(true);
    throw run_stopped(report::stop_reason::memory, 0, 0, 0, rss);
  }
}

}  // namespace backoff::sim
