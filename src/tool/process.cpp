// SPDX-License-Identifier: Apache-2.0
#include "process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <system_error>
#include <thread>

#include "descriptors.hpp"
#include "throw_errno.hpp"

extern char** environ;

namespace backoff::tool {
namespace {

using namespace std::chrono_literals;

// Closes a descriptor on scope exit.
class fd_guard {
 public:
  explicit fd_guard(int fd) noexcept : fd_(fd) {}
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  ~fd_guard() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

// Through syscall(): Debian 12's <sys/pidfd.h> lacks extern "C", so its wrappers do not link
// from C++.
int open_pidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U));
}
void signal_pidfd(int pidfd, int signal) {
  ::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0U);
}

timespec to_timespec(duration d) {
  if (d.count() < 0) d = duration{0};
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(d.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(d.count() % 1'000'000'000);
  return ts;
}

// True once the process behind `pidfd` has ended (it stays a zombie until reaped).
bool has_exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  for (;;) {
    const int n = ::poll(&p, 1, 0);
    if (n >= 0) return n > 0;
    if (errno != EINTR) throw_errno("poll on a pidfd");
  }
}

// The same for our own child without a pidfd: it cannot be reaped behind our back, so its pid
// stays its own until we reap it.
bool child_has_exited(pid_t pid) {
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0) {
      return info.si_pid != 0;
    }
    if (errno == ECHILD) return true;
    if (errno != EINTR) throw_errno("waitid");
  }
}

// The leader's status, read without reaping it: while it is an unreaped zombie its pid, and so
// its process group id, cannot be reused, which makes signalling the group safe.
siginfo_t peek_status(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) {
    if (errno != EINTR) throw_errno("waitid");
  }
  return info;
}

void reap(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED) != 0) {
    if (errno != EINTR) return;  // ECHILD: nothing left to reap
  }
}

// Our child, the leader of its process group (unless !own_group), watched through a pidfd. When
// no descriptor was left for the pidfd after the child had started (EMFILE, ENFILE), the child is
// not killed: it is watched by polling waitid() every few milliseconds, and the pidfd is asked for
// again on every poll.
class running_child {
 public:
  running_child(pid_t pid, int pidfd, bool own_group) noexcept
      : pid_(pid), pidfd_(pidfd), own_group_(own_group) {}
  running_child(const running_child&) = delete;
  running_child& operator=(const running_child&) = delete;
  ~running_child() {
    if (pidfd_ >= 0) ::close(pidfd_);
  }

  pid_t pid() const noexcept { return pid_; }
  int pidfd() const noexcept { return pidfd_; }
  bool own_group() const noexcept { return own_group_; }

  // In the degraded mode: one more try for a pidfd.
  void retry_pidfd() noexcept {
    if (pidfd_ < 0) pidfd_ = open_pidfd(pid_);
  }

  bool exited() const { return pidfd_ >= 0 ? has_exited(pidfd_) : child_has_exited(pid_); }

  // ESRCH and EPERM are expected here (the group emptied meanwhile, or a member changed its
  // credentials), and there is nothing better to do than carry on: the wait below notices.
  void send(int signal) const {
    if (own_group_) {
      ::kill(-pid_, signal);
      if (signal != SIGKILL && signal != SIGCONT) ::kill(-pid_, SIGCONT);  // stopped ones too
    }
    // The leader, even if it left the group. Without a pidfd, kill() is as safe: the pid of an
    // unreaped child cannot be reused.
    if (pidfd_ >= 0) {
      signal_pidfd(pidfd_, signal);
    } else {
      ::kill(pid_, signal);
    }
  }

  // Whether anything of it is left: the leader first (known without /proc), then the group.
  group_state state() const {
    if (!exited()) return group_state::alive;
    return own_group_ ? inspect_group(pid_) : group_state::gone;
  }

 private:
  pid_t pid_;
  int pidfd_;
  bool own_group_;
};

// Waits up to `limit` for everything to end: `gone` if it did, else what was last seen (`alive`,
// or `unknown` when the group could not be inspected).
group_state wait_until_gone(const running_child& child, duration limit) {
  const duration until = saturating_add(steady_now(), limit);
  for (;;) {
    const group_state seen = child.state();
    if (seen == group_state::gone) return seen;
    const duration left = until - steady_now();
    if (left.count() <= 0) return seen;
    std::this_thread::sleep_for(std::min<duration>(left, 5ms));
  }
}

// TERM (or the scope's signal), grace, then KILL, repeated every second until nothing of the group
// is left: a process in uninterruptible sleep can take a while to die (ftsh's "strong" mode).
// A group that cannot be inspected (no descriptor for /proc) is not taken for alive: it gets its
// grace and a KILL, which nothing can ignore, and then nothing is waited for that cannot be seen.
void stop_everything(const running_child& child, int first_signal, duration grace) {
  child.send(first_signal);
  if (wait_until_gone(child, grace) == group_state::gone) return;
  // After 60 s of SIGKILLs the process is stuck in the kernel; waiting longer helps no one.
  for (int round = 0; round < 60; ++round) {
    child.send(SIGKILL);
    if (wait_until_gone(child, 1s) != group_state::alive) return;
  }
}

attempt_result start_failure(int error, const std::string& program, duration started) {
  attempt_result r;
  const bool missing = error == ENOENT || error == ENOTDIR;
  r.ended = missing ? attempt_end::not_found : attempt_end::not_executable;
  r.error = "cannot run '" + program + "': " + std::strerror(error);
  r.elapsed = steady_now() - started;
  return r;
}

// The null-terminated array of pointers that posix_spawn takes for argv and envp.
std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const auto& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// The signals ignore_write_signals() makes the tool ignore, and which of them it found ignored
// already (bit n: signal n), which the commands then inherit as they would without the tool.
constexpr int write_signals[] = {SIGPIPE, SIGXFSZ};
std::atomic<bool> write_signals_ignored{false};
std::atomic<std::uint64_t> found_ignored{0};

bool ignored_now(int signal) {
  struct sigaction current {};
  return ::sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
}

// The signals a child gets back at their default action: the tool's ignored write signals,
// except those the tool found ignored itself.
sigset_t write_signals_to_restore() {
  sigset_t set;
  sigemptyset(&set);
  if (!write_signals_ignored.load()) return set;
  const std::uint64_t inherited = found_ignored.load();
  for (const int s : write_signals) {
    if ((inherited >> s & 1U) == 0) sigaddset(&set, s);
  }
  return set;
}

// posix_spawnp's error number: 0 when `pid` runs the command.
int spawn_child(const launch_spec& spec, pid_t& pid) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attributes);
  for (const auto& [child_fd, source_fd] : spec.descriptors) {
    if (child_fd != source_fd) ::posix_spawn_file_actions_adddup2(&actions, source_fd, child_fd);
  }
  // The tool blocks the signals it handles in every thread; the child starts with none blocked.
  sigset_t none;
  sigemptyset(&none);
  ::posix_spawnattr_setsigmask(&attributes, &none);
  // SIGPIPE and SIGXFSZ as the tool found them (ignore_write_signals).
  const sigset_t restore = write_signals_to_restore();
  ::posix_spawnattr_setsigdefault(&attributes, &restore);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (spec.own_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    ::posix_spawnattr_setpgroup(&attributes, 0);
  }
  ::posix_spawnattr_setflags(&attributes, flags);

  const std::vector<char*> argv = c_strings(spec.argv);
  const std::vector<char*> envp = c_strings(spec.environment);
  const int error = ::posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  return error;
}

// A pidfd for the new child; -1 (the degraded mode, see running_child) when no descriptor is
// left. Any other failure is not expected: the child is killed rather than left unwatched.
int pidfd_of_new_child(pid_t pid) {
  const int pidfd = open_pidfd(pid);
  if (pidfd < 0) {
    const int error = errno;
    if (error == EMFILE || error == ENFILE) return -1;
    ::kill(pid, SIGKILL);
    reap(pid);
    throw std::system_error(error, std::generic_category(), "pidfd_open");
  }
  return pidfd;
}

// The descriptor that a cancellation pokes to end the wait for the child, opened before the child
// is started: when none is left, nothing has been started (start_shortage).
int open_wake_eventfd() {
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) throw_start_error(errno, "eventfd");
  return wake;
}

enum class attempt_stop { exited, timed_out, cancelled };

// Waits until the child ends by itself, its time is up, or its scope is cancelled (which pokes
// `wake`).
attempt_stop wait_for_attempt(running_child& child, int wake, const attempt_limits& limits,
                              const cancel_scope& scope) {
  for (;;) {
    child.retry_pidfd();
    // Without a pidfd (degraded mode) the child is polled every 5 ms: poll() skips the -1.
    const bool polling = child.pidfd() < 0;
    std::optional<duration> wait;
    if (limits.kill_at) {
      const duration left = *limits.kill_at - steady_now();
      if (left.count() <= 0) return attempt_stop::timed_out;
      wait = left;
    }
    if (polling) wait = std::min<duration>(wait.value_or(5ms), 5ms);
    timespec timeout{};
    if (wait) timeout = to_timespec(*wait);
    pollfd fds[2] = {{child.pidfd(), POLLIN, 0}, {wake, POLLIN, 0}};
    const int n = ::ppoll(fds, 2, wait ? &timeout : nullptr, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;  // before kill and waitid can change it
      child.send(SIGKILL);
      reap(child.pid());
      throw std::system_error(error, std::generic_category(), "ppoll");
    }
    if (fds[0].revents != 0 || (polling && child.exited())) return attempt_stop::exited;
    if (fds[1].revents != 0 || scope.cancelled()) return attempt_stop::cancelled;
  }
}

// After a failure the rest of the group is stopped: its leftovers must not overlap the next
// attempt.
attempt_result ended_by_itself(const running_child& child, duration grace,
                               const success_test& succeeded) {
  attempt_result result;
  const siginfo_t info = peek_status(child.pid());
  if (info.si_code == CLD_EXITED) {
    result.ended = attempt_end::exited;
    result.exit_code = info.si_status;
  } else {
    result.ended = attempt_end::signaled;
    result.signal = info.si_status;
  }
  // A group that cannot be inspected may still hold a process: it is stopped like a live one.
  if (child.own_group() && !succeeded(result) && inspect_group(child.pid()) != group_state::gone) {
    stop_everything(child, SIGTERM, grace);
  }
  return result;
}

// Its status says why it was stopped; exit_code or signal, how it ended if it has.
attempt_result stopped_by_us(const running_child& child, attempt_stop why, duration grace,
                             const cancel_scope& scope) {
  attempt_result result;
  const int first = why == attempt_stop::cancelled ? scope.signal() : SIGTERM;
  stop_everything(child, first, grace);
  if (child.exited()) {
    const siginfo_t info = peek_status(child.pid());
    if (info.si_code == CLD_EXITED) {
      result.exit_code = info.si_status;
    } else {
      result.signal = info.si_status;
    }
  }
  if (why == attempt_stop::timed_out) {
    result.ended = attempt_end::timed_out;
  } else {
    result.ended = attempt_end::cancelled;
    result.cancel_signal = scope.signal();
  }
  return result;
}

attempt_result cancelled_before_start(const cancel_scope& scope, duration started) {
  attempt_result result;
  result.ended = attempt_end::cancelled;
  result.cancel_signal = scope.signal();
  result.elapsed = steady_now() - started;
  return result;
}

attempt_result timed_out_before_start(duration started) {
  attempt_result result;
  result.ended = attempt_end::timed_out;
  result.elapsed = steady_now() - started;
  return result;
}

// One try at starting the command, and if it started, the whole attempt. Throws start_shortage
// when it could not start for want of a descriptor or a process: then nothing was started.
attempt_result start_and_watch(const launch_spec& spec, const attempt_limits& limits,
                               const cancel_scope& scope, const success_test& succeeded,
                               duration started) {
  if (scope.cancelled()) return cancelled_before_start(scope, started);
  if (limits.kill_at && steady_now() >= *limits.kill_at) return timed_out_before_start(started);

  const int wake = open_wake_eventfd();
  const fd_guard wake_owner(wake);
  pid_t pid = -1;
  const int spawn_error = spawn_child(spec, pid);
  if (spawn_error != 0) {
    if (is_shortage(spawn_error)) throw_start_error(spawn_error, "posix_spawn");
    return start_failure(spawn_error, spec.argv[0], started);
  }
  running_child child(pid, pidfd_of_new_child(pid), spec.own_group);
  const auto poke = [wake]() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake, &one, sizeof one);
  };
  const std::stop_callback on_cancel(scope.token(), poke);

  const attempt_stop why = wait_for_attempt(child, wake, limits, scope);
  attempt_result result = why == attempt_stop::exited
                              ? ended_by_itself(child, limits.grace, succeeded)
                              : stopped_by_us(child, why, limits.grace, scope);
  if (child.exited()) reap(pid);  // else stuck in the kernel: leave it rather than hang
  result.elapsed = steady_now() - started;
  return result;
}

}  // namespace

std::string_view to_string(attempt_end e) noexcept {
  switch (e) {
    case attempt_end::exited:
      return "exited";
    case attempt_end::signaled:
      return "signaled";
    case attempt_end::timed_out:
      return "timed_out";
    case attempt_end::cancelled:
      return "cancelled";
    case attempt_end::not_found:
      return "not_found";
    case attempt_end::not_executable:
      return "not_executable";
  }
  return "?";
}

void ignore_write_signals() {
  if (write_signals_ignored.load()) return;  // a second call would take ours for inherited ones
  std::uint64_t inherited = 0;
  for (const int s : write_signals) {
    if (ignored_now(s)) inherited |= std::uint64_t{1} << s;
    ::signal(s, SIG_IGN);
  }
  found_ignored.store(inherited);
  write_signals_ignored.store(true);
}

duration steady_now() {
  return std::chrono::duration_cast<duration>(std::chrono::steady_clock::now().time_since_epoch());
}

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

void set_variable(std::vector<std::string>& environment, std::string_view name,
                  std::string_view value) {
  std::string entry = std::string(name) + "=" + std::string(value);
  for (auto& e : environment) {
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
      e = std::move(entry);
      return;
    }
  }
  environment.push_back(std::move(entry));
}

void unset_variable(std::vector<std::string>& environment, std::string_view name) {
  std::erase_if(environment, [name](const std::string& e) {
    return e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=';
  });
}

group_state inspect_group(pid_t pgid) {
  // No descriptor needed for the common answer: no process of the group is left at all.
  if (::kill(-pgid, 0) != 0) {
    if (errno == ESRCH) return group_state::gone;
    if (errno != EPERM) return group_state::unknown;  // EPERM: there is one, not ours to signal
  }
  // kill() also finds zombies, which only their parent (often init) can remove: look at states.
  // One /proc descriptor for the whole process, kept open, and one /proc/N/stat at a time, under
  // a lock: the tool's reserve covers them, however many attempts run (descriptors.hpp).
  static std::mutex mutex;
  static DIR* proc = nullptr;
  const std::lock_guard lock(mutex);
  if (proc == nullptr) {
    proc = ::opendir("/proc");
    if (proc == nullptr) return group_state::unknown;  // not a fact about the group
  } else {
    ::rewinddir(proc);
  }
  // A process whose state could not be read for want of a descriptor or memory might be in the
  // group. One that is not ours to read (EACCES under hidepid) or has just gone is skipped.
  bool unreadable = false;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(proc);
    if (entry == nullptr) {
      if (errno != 0) unreadable = true;  // the listing itself was cut short
      break;
    }
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    const std::string path = std::string(entry->d_name) + "/stat";
    const int fd = ::openat(::dirfd(proc), path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (is_shortage(errno)) unreadable = true;
      continue;
    }
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    const int read_error = errno;
    ::close(fd);
    if (n < 0 && is_shortage(read_error)) unreadable = true;
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) S ppid pgrp ...": comm may contain anything, so parse after its last ')'.
    const char* close_paren = std::strrchr(buf, ')');
    if (close_paren == nullptr) continue;
    char state = 0;
    long ppid = 0;
    long pgrp = 0;
    if (std::sscanf(close_paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') return group_state::alive;
  }
  return unreadable ? group_state::unknown : group_state::gone;
}

attempt_result run_attempt(const launch_spec& spec, const attempt_limits& limits,
                           const cancel_scope& scope, const success_test& succeeded) {
  if (spec.argv.empty()) throw std::invalid_argument("run_attempt: empty command");
  const duration started = steady_now();
  for (;;) {
    attempt_slot slot;
    try {
      return start_and_watch(spec, limits, scope, succeeded, started);
    } catch (const start_shortage& e) {
      // Nothing was started. Inside a caller's slot (run_item), the caller decides.
      if (!slot.outermost()) throw;
      if (slot.wait_after_shortage(scope, limits.kill_at)) continue;
      if (scope.cancelled()) return cancelled_before_start(scope, started);
      if (limits.kill_at && steady_now() >= *limits.kill_at) return timed_out_before_start(started);
      throw_gave_up(e, spec.argv[0]);
    }
  }
}

}  // namespace backoff::tool
