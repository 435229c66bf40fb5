// SPDX-License-Identifier: Apache-2.0
// Most of what made the client fast, as the server (src/net/server/server.cpp): the request is
// written with one non-blocking send (the rest, if the socket did not take it all,
// asynchronously) rather than a composed write that completes through the scheduler; the answer
// is read with one plain read into the connection's buffer rather than http::async_read's composed
// one, taken by its bytes when it is a known answer (known_replies) and otherwise parsed by a
// parser that keeps only what the client uses; the timeout is the connection's watchdog, not a
// timer operation per read and write (beast::basic_stream). Unlike the server, the client does
// not wait for readiness before reading: Asio re-arms the descriptor with an epoll_ctl for every
// wait (strace: one per request), while its speculative read finds the answer already there
// whenever the client is busy, which is when its cost matters (and costs one EAGAIN when it is
// idle). The parts that do not wait are plain functions, not coroutines: a coroutine per part
// would be a frame, an allocation, per attempt.
#include "attempt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <chrono>
#include <iterator>
#include <string>
#include <string_view>
#include <tuple>

#include "backoff/deadline_headers.hpp"
#include "backoff/http.hpp"
#include "backoff/random.hpp"
#include "faults/faults.hpp"

namespace backoff::net::load_detail {
namespace {

// Informational answers skipped before an answer; one more is an error.
constexpr int max_interim_replies = 32;

// `elapsed` in milliseconds with six decimals ("12.500000"), exactly: the decimal number of
// milliseconds a fading errors fault reads (faults::since_first_attempt_header).
void append_milliseconds(std::string& out, duration elapsed) {
  const std::int64_t ns = std::max<std::int64_t>(elapsed.count(), 0);
  fmt::format_to(std::back_inserter(out), "{}.{:06}", ns / 1'000'000, ns % 1'000'000);
}

// The request of attempt `attempt` of `op`, sent at `sent`: the prepared bytes when it is the
// operation's first and adds nothing (the common case, without a copy), otherwise those bytes
// and, before the blank line, the operation's key (send_key), how long ago its first attempt left
// (every attempt but the first), and with propagate_deadline the time the server may take
// (`time_allowed`: the timeout, cut to the operation's deadline) and the attempt number
// (deadline_headers.hpp).
std::string_view request_bytes(const load_state& s, connection& c, const in_flight_op& op,
                               bool first_of_op, std::uint32_t attempt, steady::time_point sent,
                               duration time_allowed) {
  const load_options& o = s.options;
  if (first_of_op && !o.propagate_deadline && !o.send_key) return s.request_text;
  const std::string_view head(s.request_text.data(), s.request_text.size() - 2);  // "\r\n"
  c.request.assign(head);
  auto out = std::back_inserter(c.request);
  if (o.send_key) fmt::format_to(out, "x-backoff-key: {}\r\n", operation_key(op.id));
  if (!first_of_op) {
    fmt::format_to(out, "{}: ", faults::since_first_attempt_header);
    append_milliseconds(c.request, std::chrono::duration_cast<duration>(sent - op.first_sent));
    c.request += "\r\n";
  }
  if (o.propagate_deadline) {
    c.request += "grpc-timeout: " + format_grpc_timeout(time_allowed) + "\r\n";
    c.request += "x-envoy-expected-rq-timeout-ms: " + format_timeout_ms(time_allowed) + "\r\n";
    c.request += "x-envoy-attempt-count: " + std::to_string(attempt) + "\r\n";
    if (attempt > 1)
      c.request += "grpc-previous-rpc-attempts: " + std::to_string(attempt - 1) + "\r\n";
  }
  c.request += "\r\n";
  return c.request;
}

// The attempt got no answer: `ec` said why (or the watchdog, when it fired); the connection is
// closed, and the failure counted as the server's error, a timeout, or a local error.
reply failed_attempt(load_state& s, connection& c, beast::error_code ec) {
  // The watchdog cancelled the attempt's operation, or its time ran out while it completed.
  if (c.watch->fired) ec = beast::error::timeout;
  c.close();
  reply r;
  if (ec == asio::error::operation_aborted) {
    // A hedge's loser, cancelled when another copy won: neither an error nor a timeout.
    r.kind = reply_kind::cancelled;
    ++s.counts.cancelled;
  } else if (ec == beast::error::timeout) {
    r.kind = reply_kind::timeout;
    ++s.counts.timeouts;
    s.recorder.timeout(s.now());
  } else if (is_local_error(ec)) {
    // Not the server's: retried as any error, counted apart, said once.
    r.kind = reply_kind::error;
    ++s.counts.local_errors;
    if (!s.warned_local) {
      s.warned_local = true;
      if (s.options.on_first_local_error) s.options.on_first_local_error(ec.message());
    }
  } else {
    r.kind = reply_kind::error;
    ++s.counts.errors;
    s.recorder.error(s.now());
  }
  return r;
}

// The attempt got its answer in time: 200 is a success, anything else an error (with its
// grpc-retry-pushback-ms or Retry-After).
reply answered_attempt(load_state& s, connection& c, const reply_head& head) {
  c.watch->disarm();
  reply r;
  r.status = head.status;
  if (!head.keep_alive) c.close();
  if (r.status == 200) {
    r.kind = reply_kind::ok;
    ++s.counts.ok;
    s.recorder.success(s.now());
  } else {
    r.kind = reply_kind::error;
    if (head.grpc_retry_pushback) {
      // Before Retry-After, as classify_http_reply (http.hpp) ranks them: the wait itself, or,
      // negative or malformed, "do not retry". On any error answer, since load retries them all.
      r.retry_after = parse_grpc_retry_pushback(*head.grpc_retry_pushback);
      r.pushback = r.retry_after.has_value();
      r.do_not_retry = !r.pushback;
    } else if (head.retry_after) {
      r.retry_after = parse_retry_after(*head.retry_after, std::chrono::system_clock::now());
    }
    ++s.counts.errors;
    s.recorder.error(s.now());
  }
  return r;
}

}  // namespace

std::uint64_t operation_key(std::uint64_t id) {
  return splitmix64(id);
}

duration attempt_time(const load_state& s, const in_flight_op& op) {
  duration t = s.options.timeout;
  if (op.deadline_at) {
    t = std::min(t, duration{std::max<report::time_units>(op.deadline_at - s.now(), 1)});
  }
  return t;
}

asio::awaitable<reply> send_request(load_state& s, connection& c, in_flight_op& op,
                                    std::uint32_t attempt, duration time_allowed) {
  const steady::time_point started = steady::now();
  const bool first_of_op = op.first_sent == steady::time_point::min();
  if (first_of_op) op.first_sent = started;
  s.recorder.attempt(s.since_start(started));
  ++s.counts.requests;
  c.watch->arm(started, time_allowed);
  if (!c.socket.is_open()) {
    const auto [ec] = co_await c.socket.async_connect(s.endpoint, as_tuple_awaitable);
    if (ec || c.watch->fired) co_return failed_attempt(s, c, ec);
    beast::error_code blocking;
    c.socket.non_blocking(true, blocking);  // the request's send and the answer's reads never block
    if (blocking) co_return failed_attempt(s, c, blocking);
  }
  {
    // The prepared bytes (an attempt that adds fields: its own copy of them), written as they
    // are, without a serializer per request.
    const asio::const_buffer bytes =
        asio::buffer(request_bytes(s, c, op, first_of_op, attempt, started, time_allowed));
    beast::error_code ec;
    std::size_t sent = c.socket.write_some(bytes, ec);
    if (ec && (ec == asio::error::would_block || ec == asio::error::try_again)) {
      ec = {};
      sent = 0;
    }
    if (!ec && sent < bytes.size()) {
      std::tie(ec, std::ignore) =
          co_await asio::async_write(c.socket, bytes + sent, as_tuple_awaitable);
    }
    if (ec || c.watch->fired) co_return failed_attempt(s, c, ec);
  }
  // The answer. An informational answer (1xx but 101: 100 Continue, 103 Early Hints) comes before
  // it and is skipped (RFC 9110 section 15.2); taking it as the answer gave the real one to the
  // next request.
  reply_head head;
  for (int interim = 0;; ++interim) {
    answer_reader answer;
    for (;;) {
      beast::error_code ec = answer.take(c.buffer, s.known, head);
      if (!ec) break;
      if (ec != http::error::need_more) co_return failed_attempt(s, c, ec);
      // A plain read, not http::async_read's composed one (and not a wait for readiness, which
      // costs an epoll_ctl per request: Asio re-arms the descriptor for every wait).
      std::size_t n = 0;
      std::tie(ec, n) = co_await c.socket.async_read_some(
          c.buffer.prepare(beast::read_size(c.buffer, 65536)), as_tuple_awaitable);
      if (c.watch->fired) co_return failed_attempt(s, c, ec);
      if (ec == asio::error::eof) {
        ec = answer.take_eof(c.buffer, head);
        if (ec) co_return failed_attempt(s, c, ec);
        break;
      }
      if (ec) co_return failed_attempt(s, c, ec);
      c.buffer.commit(n);
    }
    if (head.status < 100 || head.status >= 200 || head.status == 101) break;
    if (interim == max_interim_replies) {
      co_return failed_attempt(s, c, http::error::bad_status);  // a server that only says "wait"
    }
  }
  co_return answered_attempt(s, c, head);
}

asio::awaitable<reply> send_copy(load_state& s, in_flight_op& op, std::uint32_t attempt,
                                 duration time_allowed) {
  connection own(s.context->get_executor());
  reply r = co_await send_request(s, own, op, attempt, time_allowed);
  own.close();
  co_return r;
}

}  // namespace backoff::net::load_detail
