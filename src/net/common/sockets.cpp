// SPDX-License-Identifier: Apache-2.0
#include "net/common/sockets.hpp"

#include <sys/socket.h>

#include <array>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/beast/core/error.hpp>
#include <cerrno>
#include <string>
#include <system_error>

namespace backoff::net {

void listen_on(acceptor_type& acceptor, const boost::asio::ip::tcp::endpoint& endpoint,
               bool reuse_port) {
  const auto where = [&] {
    const std::string host = endpoint.address().to_string();
    const std::string port = std::to_string(endpoint.port());
    return endpoint.address().is_v6() ? "[" + host + "]:" + port : host + ":" + port;
  };
  boost::system::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  // SO_REUSEADDR lets a restarted server bind while old connections are in TIME_WAIT; on Linux
  // it does not let two listeners share a port (SO_REUSEPORT does, when both ask for it).
  if (!ec) acceptor.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec && reuse_port) {
    const int one = 1;
    if (::setsockopt(acceptor.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
      ec.assign(errno, boost::system::system_category());
    }
  }
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::system_error(ec, "cannot listen on " + where());
}

peer_state probe_peer(socket_type& socket) noexcept {
  char byte;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return peer_state::sent_bytes;
  if (n == 0) return peer_state::closed;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? peer_state::quiet
                                                                   : peer_state::closed;
}

void reset_connection(socket_type& socket) noexcept {
  boost::system::error_code ignored;
  socket.set_option(boost::asio::socket_base::linger(true, 0), ignored);
  socket.close(ignored);
}

void close_connection(socket_type& socket) noexcept {
  boost::system::error_code ignored;
  socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

namespace {

// Reads and drops what the peer still sends, until it closes, `limit` bytes, or an error.
task<> drain(socket_type& socket, std::size_t limit) {
  std::array<char, 4096> sink;
  std::size_t drained = 0;
  while (drained < limit) {
    const auto [error, got] = co_await socket.async_read_some(boost::asio::buffer(sink), on_loop);
    if (error) co_return;
    drained += got;
  }
}

}  // namespace

task<> close_gently(socket_type& socket) {
  boost::system::error_code ignored;
  socket.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  timer_type limit(socket.get_executor());
  limit.expires_after(std::chrono::seconds(1));
  using boost::asio::experimental::awaitable_operators::operator||;
  co_await (drain(socket, std::size_t{1} << 20) || limit.async_wait(on_loop));
}

}  // namespace backoff::net
