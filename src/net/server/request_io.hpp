// SPDX-License-Identifier: Apache-2.0
// How `backoff serve` reads a request and sends an answer without a composed operation
// (server.cpp's per-connection loop): the parts of its fast path that touch the socket.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <optional>

#include "backoff/duration.hpp"
#include "handler.hpp"
#include "net/common/connections.hpp"
#include "net/common/loop.hpp"

namespace backoff::net {

// A request that does not parse, as opposed to a client that went away (or a closed socket).
bool is_malformed_request(const boost::beast::error_code& read_error);

// What a non-blocking send could not take of `bytes` (empty when it took everything), or nullopt
// after an error.
std::optional<boost::asio::const_buffer> send_at_once(socket_type& socket,
                                                      boost::asio::const_buffer bytes);

// Reads one request into `parser`, leaving any bytes after it in `buffer` for the next one.
//
// It waits for readiness before each read instead of reading first as http::async_read does:
// after an answer, a read-first nearly always finds nothing (the client has not read the answer
// yet), an EAGAIN system call per request that was the largest cost left in the server's own
// share. Waiting is safe with Asio's edge-triggered epoll: a wait re-arms the descriptor
// (EPOLL_CTL_MOD), which reports data that arrived before it. The socket is non-blocking, so a
// read after a spurious wake-up returns would_block and the loop waits again.
// The error codes are the ones http::async_read gives (end_of_stream, partial_message,
// buffer_overflow for a header larger than the buffer, the parser's own), and operation_aborted
// when the connection table closed the connection (entry.closing says why).
// Timeouts: until a byte of the request arrives the connection is idle (`idle_timeout` after an
// answer, the header timeout on a new connection: the caller arms it); from the first byte the
// whole request has `header_timeout`.
task<boost::beast::error_code> read_request(socket_type& socket, boost::beast::flat_buffer& buffer,
                                            request_parser& parser, connection_entry& entry,
                                            duration header_timeout);

}  // namespace backoff::net
