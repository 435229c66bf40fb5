// SPDX-License-Identifier: Apache-2.0
#include "run_output.hpp"

#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace backoff::tool {

void run_output::line(std::string_view text) {
  std::string whole = prefix_;
  whole += text;
  whole += '\n';
  const std::lock_guard lock(line_mutex_);
  const char* p = whole.data();
  std::size_t left = whole.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) close_run();
      return;  // stderr closed or full: nothing to report to
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

bool run_output::pass_on(const spool& held, int fd) {
  const std::lock_guard lock(output_mutex_);
  try {
    held.copy_to(fd);
    return true;
  } catch (const std::system_error& e) {
    if (e.code() != std::errc::broken_pipe) throw;
    close_run();
    return false;
  }
}

void run_output::close_run() noexcept {
  closed_.store(true);
  scope_.cancel(SIGTERM);
}

}  // namespace backoff::tool
