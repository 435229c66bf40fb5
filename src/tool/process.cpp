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

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <stop_token>
#include <system_error>
#include <thread>

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

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
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

struct running_child {
  pid_t pid;
  int pidfd;
  bool own_group;

  // ESRCH and EPERM are expected here (the group emptied meanwhile, or a member changed its
  // credentials), and there is nothing better to do than carry on: the wait below notices.
  void send(int signal) const {
    if (own_group) {
      ::kill(-pid, signal);
      if (signal != SIGKILL && signal != SIGCONT) ::kill(-pid, SIGCONT);  // stopped ones too
    }
    signal_pidfd(pidfd, signal);  // the leader, even if it left the group
  }
  bool anything_alive() const { return !has_exited(pidfd) || (own_group && group_alive(pid)); }
};

// Waits up to `limit` for everything to end; true if it did.
bool wait_until_gone(const running_child& child, duration limit) {
  const duration until = saturating_add(steady_now(), limit);
  for (;;) {
    if (!child.anything_alive()) return true;
    const duration left = until - steady_now();
    if (left.count() <= 0) return false;
    std::this_thread::sleep_for(std::min<duration>(left, 5ms));
  }
}

// TERM (or the scope's signal), grace, then KILL, repeated every second until nothing of the group
// is left: a process in uninterruptible sleep can take a while to die (ftsh's "strong" mode).
void stop_everything(const running_child& child, int first_signal, duration grace) {
  child.send(first_signal);
  if (wait_until_gone(child, grace)) return;
  // After 60 s of SIGKILLs the process is stuck in the kernel; waiting longer helps no one.
  for (int round = 0; round < 60; ++round) {
    child.send(SIGKILL);
    if (wait_until_gone(child, 1s)) return;
  }
}

attempt_result start_failure(int error, const std::string& program, duration started) {
  attempt_result r;
  const bool missing = error == ENOENT || error == ENOTDIR;
  r.ended = missing ? attempt_end::not_found : attempt_end::not_executable;
  r.status = missing ? status_not_found : status_not_executable;
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
  short flags = POSIX_SPAWN_SETSIGMASK;
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

// Without a pidfd the child could not be watched: it is killed rather than left running.
int pidfd_of_new_child(pid_t pid) {
  const int pidfd = open_pidfd(pid);
  if (pidfd < 0) {
    const int error = errno;
    ::kill(pid, SIGKILL);
    reap(pid);
    throw std::system_error(error, std::generic_category(), "pidfd_open");
  }
  return pidfd;
}

// The descriptor that a cancellation pokes to end the wait for the child.
int open_wake_eventfd(const running_child& child) {
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int error = errno;  // before kill and waitid can change it
    child.send(SIGKILL);
    reap(child.pid);
    throw std::system_error(error, std::generic_category(), "eventfd");
  }
  return wake;
}

enum class attempt_stop { exited, timed_out, cancelled };

// Waits until the child ends by itself, its time is up, or its scope is cancelled (which pokes
// `wake`).
attempt_stop wait_for_attempt(const running_child& child, int wake, const attempt_limits& limits,
                              const cancel_scope& scope) {
  for (;;) {
    timespec timeout{};
    timespec* timeout_ptr = nullptr;
    if (limits.kill_at) {
      const duration left = *limits.kill_at - steady_now();
      if (left.count() <= 0) return attempt_stop::timed_out;
      timeout = to_timespec(left);
      timeout_ptr = &timeout;
    }
    pollfd fds[2] = {{child.pidfd, POLLIN, 0}, {wake, POLLIN, 0}};
    const int n = ::ppoll(fds, 2, timeout_ptr, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;  // before kill and waitid can change it
      child.send(SIGKILL);
      reap(child.pid);
      throw std::system_error(error, std::generic_category(), "ppoll");
    }
    if (fds[0].revents != 0) return attempt_stop::exited;
    if (fds[1].revents != 0 || scope.cancelled()) return attempt_stop::cancelled;
  }
}

// After a failure the rest of the group is stopped: its leftovers must not overlap the next
// attempt.
attempt_result ended_by_itself(const running_child& child, duration grace,
                               const success_test& succeeded) {
  attempt_result result;
  const siginfo_t info = peek_status(child.pid);
  if (info.si_code == CLD_EXITED) {
    result.ended = attempt_end::exited;
    result.exit_code = info.si_status;
    result.status = info.si_status;
  } else {
    result.ended = attempt_end::signaled;
    result.signal = info.si_status;
    result.status = status_signal_base + info.si_status;
  }
  if (child.own_group && !succeeded(result) && group_alive(child.pid)) {
    stop_everything(child, SIGTERM, grace);
  }
  return result;
}

// The status says why it was stopped; exit_code or signal, how it ended if it has.
attempt_result stopped_by_us(const running_child& child, attempt_stop why, duration grace,
                             const cancel_scope& scope) {
  attempt_result result;
  const int first = why == attempt_stop::cancelled ? scope.signal() : SIGTERM;
  stop_everything(child, first, grace);
  if (has_exited(child.pidfd)) {
    const siginfo_t info = peek_status(child.pid);
    if (info.si_code == CLD_EXITED) {
      result.exit_code = info.si_status;
    } else {
      result.signal = info.si_status;
    }
  }
  if (why == attempt_stop::timed_out) {
    result.ended = attempt_end::timed_out;
    result.status = status_timed_out;
  } else {
    result.ended = attempt_end::cancelled;
    result.status = status_signal_base + scope.signal();
  }
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

bool group_alive(pid_t pgid) {
  if (::kill(-pgid, 0) != 0 && errno == ESRCH) return false;
  // kill() also finds zombies, which only their parent (often init) can remove: look at states.
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return true;
  bool alive = false;
  while (const dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/") + entry->d_name + "/stat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) S ppid pgrp ...": comm may contain anything, so parse after its last ')'.
    const char* close_paren = std::strrchr(buf, ')');
    if (close_paren == nullptr) continue;
    char state = 0;
    long ppid = 0;
    long pgrp = 0;
    if (std::sscanf(close_paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') {
      alive = true;
      break;
    }
  }
  ::closedir(proc);
  return alive;
}

attempt_result run_attempt(const launch_spec& spec, const attempt_limits& limits,
                           const cancel_scope& scope, const success_test& succeeded) {
  if (spec.argv.empty()) throw std::invalid_argument("run_attempt: empty command");
  const duration started = steady_now();
  if (scope.cancelled()) {
    attempt_result result;
    result.ended = attempt_end::cancelled;
    result.status = status_signal_base + scope.signal();
    return result;
  }

  pid_t pid = -1;
  const int spawn_error = spawn_child(spec, pid);
  if (spawn_error != 0) return start_failure(spawn_error, spec.argv[0], started);
  const int pidfd = pidfd_of_new_child(pid);
  const fd_guard pidfd_owner(pidfd);
  const running_child child{pid, pidfd, spec.own_group};

  const int wake = open_wake_eventfd(child);
  const fd_guard wake_owner(wake);
  const auto poke = [wake]() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake, &one, sizeof one);
  };
  const std::stop_callback on_cancel(scope.token(), poke);

  const attempt_stop why = wait_for_attempt(child, wake, limits, scope);
  attempt_result result = why == attempt_stop::exited
                              ? ended_by_itself(child, limits.grace, succeeded)
                              : stopped_by_us(child, why, limits.grace, scope);
  if (has_exited(pidfd)) reap(pid);  // else stuck in the kernel: leave it rather than hang
  result.elapsed = steady_now() - started;
  return result;
}

}  // namespace backoff::tool
