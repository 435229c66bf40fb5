// SPDX-License-Identifier: Apache-2.0
#include "descriptors.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

namespace backoff::tool {
namespace {

// Descriptors below `limit` that are open, by asking for each number: no descriptor needed.
std::size_t probe_open_descriptors(std::size_t limit) {
  // A soft limit of millions (some containers) would take a while to probe; numbers that high
  // are never in use when /proc is not readable, the only time this runs.
  const std::size_t upto = std::min<std::size_t>(limit, std::size_t{1} << 20);
  std::size_t open = 0;
  for (std::size_t fd = 0; fd < upto; ++fd) {
    if (::fcntl(static_cast<int>(fd), F_GETFD) != -1) ++open;
  }
  return open;
}

// Through /proc/self/fd; none when it cannot be read (then the caller probes).
std::optional<std::size_t> listed_open_descriptors(std::size_t limit) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  const int own = ::dirfd(dir);
  std::size_t open = 0;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const unsigned long fd = std::strtoul(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;  // "." and ".."
    if (static_cast<int>(fd) == own || fd >= limit) continue;
    ++open;
  }
  ::closedir(dir);
  return open;
}

// The process-wide count of attempts holding descriptors, and of attempts that ended.
struct slot_registry {
  std::mutex mutex;
  std::condition_variable_any ended;
  std::size_t running = 0;
  std::uint64_t ends = 0;
};

slot_registry& registry() {
  static slot_registry r;
  return r;
}

thread_local int slot_depth = 0;

}  // namespace

bool is_shortage(int error) noexcept {
  return error == EMFILE || error == ENFILE || error == EAGAIN || error == ENOMEM;
}

void throw_start_error(int error, const std::string& what) {
  if (is_shortage(error)) throw start_shortage(error, std::generic_category(), what);
  throw std::system_error(error, std::generic_category(), what);
}

void throw_gave_up(const start_shortage& e, const std::string& program) {
  std::string why;
  switch (e.code().value()) {
    case EMFILE: {
      rlimit lim{};
      why = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
                ? "no descriptor left below the limit, ulimit -n " + std::to_string(lim.rlim_cur)
                : "no descriptor left below the limit";
      break;
    }
    case ENFILE:
      why = "the system's table of open files is full";
      break;
    case EAGAIN:
      why = "no process left: the limit (ulimit -u) or the system's";
      break;
    default:
      why = "out of memory";
      break;
  }
  throw std::runtime_error("cannot start '" + program + "': " + e.what() + " (" + why +
                           ", and no other command was running to free one)");
}

std::size_t descriptor_budget::commands_at_once(std::size_t per_attempt) const noexcept {
  return std::max<std::size_t>(1, available() / std::max<std::size_t>(1, per_attempt));
}

descriptor_budget current_descriptor_budget() {
  descriptor_budget b;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) {
    b.limit = std::size_t{1} << 20;  // Linux's default ceiling (fs.nr_open)
  } else {
    b.limit = static_cast<std::size_t>(lim.rlim_cur);
  }
  b.open = listed_open_descriptors(b.limit).value_or(0);
  if (b.open == 0) b.open = probe_open_descriptors(b.limit);  // 0, 1, 2 are open as a rule
  const std::size_t free = b.limit > b.open ? b.limit - b.open : 0;
  b.reserve = free >= 64 ? 16 : free / 4;
  return b;
}

std::size_t descriptors_per_attempt(bool stdout_on_success, bool replay_stdin) noexcept {
  std::size_t n = 2;  // the child's pidfd, the cancellation eventfd
  if (stdout_on_success) ++n;
  if (replay_stdin) ++n;
  return n;
}

attempt_slot::attempt_slot() : outermost_(slot_depth++ == 0) {
  if (!outermost_) return;
  slot_registry& r = registry();
  const std::lock_guard lock(r.mutex);
  ++r.running;
  seen_ends_ = r.ends;
  counted_ = true;
}

attempt_slot::~attempt_slot() {
  --slot_depth;
  if (!counted_) return;
  slot_registry& r = registry();
  {
    const std::lock_guard lock(r.mutex);
    --r.running;
    ++r.ends;
  }
  r.ended.notify_all();
}

bool attempt_slot::wait_after_shortage(const cancel_scope& scope, std::optional<duration> until) {
  if (!outermost_) return false;
  slot_registry& r = registry();
  std::unique_lock lock(r.mutex);
  if (counted_) {
    --r.running;  // it holds nothing now; not an end that frees anything for the others
    counted_ = false;
    r.ended.notify_all();  // a waiter may now see that nothing is running
  }
  const auto ready = [&] { return r.ends != seen_ends_ || r.running == 0; };
  std::stop_token token = scope.token();
  if (until) {
    const auto at = std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(*until));
    r.ended.wait_until(lock, token, at, ready);
  } else {
    r.ended.wait(lock, token, ready);
  }
  return r.ends != seen_ends_ && !scope.cancelled();
}

}  // namespace backoff::tool
