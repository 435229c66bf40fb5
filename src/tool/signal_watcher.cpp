// SPDX-License-Identifier: Apache-2.0
#include "signal_watcher.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace backoff::tool {
namespace {

sigset_t watched_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, s);
  return set;
}

}  // namespace

signal_watcher::signal_watcher(cancel_scope& scope) : scope_(scope) {
  const sigset_t set = watched_signals();
  if (const int e = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); e != 0) {
    throw std::system_error(e, std::generic_category(), "pthread_sigmask");
  }
  signal_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC);
  quit_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (signal_fd_ < 0 || quit_fd_ < 0) {
    const int e = errno;
    if (signal_fd_ >= 0) ::close(signal_fd_);
    if (quit_fd_ >= 0) ::close(quit_fd_);
    throw std::system_error(e, std::generic_category(), "signalfd");
  }
  // A thread of its own with a small stack: it only polls and reads. std::thread's default 8 MiB
  // mapping, and its start, are a measurable part of `backoff-try`'s start-up.
  pthread_attr_t attr;
  ::pthread_attr_init(&attr);
  ::pthread_attr_setstacksize(&attr, 64 * 1024);
  const int e = ::pthread_create(&thread_, &attr, &signal_watcher::watch, this);
  ::pthread_attr_destroy(&attr);
  if (e != 0) {
    ::close(signal_fd_);
    ::close(quit_fd_);
    throw std::system_error(e, std::generic_category(), "pthread_create");
  }
}

void* signal_watcher::watch(void* self) {
  auto& w = *static_cast<signal_watcher*>(self);
  for (;;) {
    pollfd fds[2] = {{w.signal_fd_, POLLIN, 0}, {w.quit_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return nullptr;
    }
    if (fds[1].revents != 0) return nullptr;
    signalfd_siginfo info{};
    if (::read(w.signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      w.scope_.cancel(static_cast<int>(info.ssi_signo));
    }
  }
}

signal_watcher::~signal_watcher() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(quit_fd_, &one, sizeof one);
  ::pthread_join(thread_, nullptr);
  ::close(signal_fd_);
  ::close(quit_fd_);
  // The signals stay blocked: the tool is about to exit with 128 + n itself. A pending one would
  // otherwise kill it before it reports.
}

}  // namespace backoff::tool
