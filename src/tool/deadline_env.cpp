// SPDX-License-Identifier: Apache-2.0
#include "deadline_env.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string_view>

#include "backoff/error.hpp"
#include "process.hpp"

namespace backoff::tool {

std::string process_identity(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return {};
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so fields are counted
  // after the last ')'; the start time is field 22, the 20th after it.
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 0; i < 20 && fields >> field; ++i) {
  }
  if (!fields || field.empty()) return {};
  return std::to_string(pid) + ":" + field;
}

inherited_deadline read_inherited_deadline(const char* deadline, const char* owner) {
  inherited_deadline out;
  if (deadline == nullptr || *deadline == '\0') return out;
  const std::string_view s(deadline);
  double unix_s = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), unix_s);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(unix_s) || unix_s < 0) {
    out.note = "BACKOFF_DEADLINE='" + escape_controls(s.substr(0, 40)) +
               "' ignored: not a time in Unix seconds";
    return out;
  }
  if (owner != nullptr && *owner != '\0') {
    const std::string_view o(owner);
    long pid = 0;
    const auto [pid_end, pid_ec] = std::from_chars(o.data(), o.data() + o.size(), pid);
    const bool well_formed =
        pid_ec == std::errc{} && pid > 0 && pid_end != o.data() + o.size() && *pid_end == ':';
    const std::string identity = well_formed ? process_identity(pid) : std::string();
    // An identity that cannot be read is not proof that the owner has ended (/proc unmounted, no
    // descriptor left): kill(pid, 0), which needs neither, says whether the pid is gone. A pid
    // that is there but cannot be checked keeps the deadline (the tighter choice), said in a note.
    const bool pid_gone = well_formed && identity.empty() &&
                          ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
    if (!well_formed || pid_gone || (!identity.empty() && identity != o)) {
      out.note = "BACKOFF_DEADLINE ignored: the backoff run that set it (" +
                 escape_controls(o.substr(0, 40)) + ") has ended";
      return out;
    }
    if (identity.empty()) {
      out.note = "BACKOFF_DEADLINE_OWNER (" + escape_controls(o.substr(0, 40)) +
                 ") could not be checked (/proc/" + std::to_string(pid) +
                 "/stat unreadable): the deadline is honoured";
    }
  }
  const double left_s = unix_s - unix_now_s();
  if (left_s > 1e9) return out;  // decades away: not a deadline that means anything
  out.deadline =
      steady_now() + std::chrono::duration_cast<duration>(std::chrono::duration<double>(left_s));
  return out;
}

void export_deadline(std::vector<std::string>& environment, std::optional<duration> deadline) {
  if (!deadline) {
    unset_variable(environment, "BACKOFF_DEADLINE");
    unset_variable(environment, "BACKOFF_DEADLINE_OWNER");
    return;
  }
  // Whole seconds, rounded down: a child that plans by it finishes early rather than late.
  const double at = unix_now_s() + to_seconds(*deadline - steady_now());
  set_variable(environment, "BACKOFF_DEADLINE",
               std::to_string(static_cast<long long>(std::floor(at))));
  // Read once, but only once it could be read: a failure (no descriptor left at the first
  // attempt) must not leave every later attempt without an owner.
  static std::mutex mutex;
  static std::string cached;
  std::string self;
  {
    const std::lock_guard lock(mutex);
    if (cached.empty()) cached = process_identity(static_cast<long>(::getpid()));
    self = cached;
  }
  if (self.empty()) {
    unset_variable(environment, "BACKOFF_DEADLINE_OWNER");
  } else {
    set_variable(environment, "BACKOFF_DEADLINE_OWNER", self);
  }
}

}  // namespace backoff::tool
