// SPDX-License-Identifier: Apache-2.0
// What `backoff serve` and `backoff proxy` do to a socket beyond reading and writing: listen,
// probe whether the peer is still there, close gently after an error answer, reset, close.
//
//   listen_on(acceptor, endpoint, false);         // throws std::system_error naming the address
//   if (peer_closed(client)) ...                   // the client left (pipelined bytes are not
//   that) co_await close_gently(client);                 // after a 400 with request bytes unread
//   reset_connection(client);                      // the peer sees ECONNRESET
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include "net/common/loop.hpp"

namespace backoff::net {

// Opens, binds and listens (SO_REUSEADDR; SO_REUSEPORT too with `reuse_port`); throws
// std::system_error naming the address at every step: an exception of Boost's own type would
// escape callers that catch std::system_error.
void listen_on(acceptor_type& acceptor, const boost::asio::ip::tcp::endpoint& endpoint,
               bool reuse_port);

// What a non-blocking peek at the socket finds: nothing yet, bytes, or the end of the stream (or
// an error: the peer is gone either way). No system call but the one recv, no read.
enum class peer_state { quiet, sent_bytes, closed };
peer_state probe_peer(socket_type& socket) noexcept;

// True when the peer has closed its side (recv would return 0), or the socket failed.
inline bool peer_closed(socket_type& socket) noexcept {
  return probe_peer(socket) == peer_state::closed;
}

// A reset as the peer sees it (ECONNRESET): SO_LINGER with a zero timeout makes close() send RST
// instead of FIN.
void reset_connection(socket_type& socket) noexcept;

// Shutdown and close, errors ignored (a socket already closed or reset stays so).
void close_connection(socket_type& socket) noexcept;

// Before closing a connection with request bytes still unread (a header over the limit, a body
// not read): closing at once would reset it, and the client's TCP would drop the answer before
// the client reads it. So this stops sending and drains what the client still sends, for at most
// a second or 1 MiB (nginx's lingering close). Closing the socket (a stop) ends it at once.
task<> close_gently(socket_type& socket);

}  // namespace backoff::net
