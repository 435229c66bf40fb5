// SPDX-License-Identifier: Apache-2.0
#include "message_prefix.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace backoff::tool {

std::string message_prefix(std::string_view command) {
  std::string prefix = "backoff ";
  prefix += command;
  prefix += ": ";
  return prefix;
}

void signal_safe_line::set(std::string_view command, std::string_view text) {
  const std::string line = message_prefix(command) + std::string(text);
  const std::size_t size = std::min(line.size(), capacity - 1);  // room for the newline
  std::copy_n(line.data(), size, bytes_.data());
  bytes_[size] = '\n';
  size_.store(size + 1, std::memory_order_release);
}

std::string_view signal_safe_line::text() const noexcept {
  return {bytes_.data(), size_.load(std::memory_order_acquire)};
}

void signal_safe_line::write_to(int fd) const noexcept {
  const std::string_view line = text();
  if (line.empty()) return;
  const int saved = errno;
  (void)!::write(fd, line.data(), line.size());
  errno = saved;
}

}  // namespace backoff::tool
