// SPDX-License-Identifier: Apache-2.0
// Raw HTTP over one loopback connection, for the CLI tests that talk to a `backoff serve` or
// `backoff proxy` child: the bytes as sent, the bytes as answered, no HTTP library in between.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace backoff::test {

// A socket connected to 127.0.0.1:`port`, or -1.
inline int connect_to_loopback(const std::string& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(port)));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` (which should say "Connection: close") on a new connection and returns what
// came back until the peer closed it, or what came within `limit`; "(no connection)" when the
// connection was refused.
inline std::string http_exchange(const std::string& port, const std::string& request,
                                 std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const int fd = connect_to_loopback(port);
  if (fd < 0) return "(no connection)";
  (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1) break;
    char chunk[4096];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    answer.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return answer;
}

}  // namespace backoff::test
