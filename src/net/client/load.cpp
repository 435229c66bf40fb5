// SPDX-License-Identifier: Apache-2.0
#include "load.hpp"

#include <fmt/format.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "backoff/async_hedge.hpp"
#include "backoff/async_retry.hpp"
#include "backoff/async_window.hpp"
#include "backoff/deadline_headers.hpp"
#include "backoff/error.hpp"
#include "backoff/http.hpp"
#include "backoff/random.hpp"
#include "report/hdr_log.hpp"

namespace backoff::net {
// The client's internals, in a namespace of their own: backoff_net may be built as one unity
// source, where every file's anonymous namespace is the same one (the server's has a
// socket_type, a parse_buffered of its own).
namespace load_detail {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto as_tuple_awaitable = asio::as_tuple(asio::use_awaitable);

enum class reply_kind { ok, error, timeout, cancelled };

struct reply {
  reply_kind kind = reply_kind::error;
  int status = 0;
  std::optional<duration> retry_after;
};

verdict classify_reply(const reply& r) {
  switch (r.kind) {
    case reply_kind::ok:
      return verdict::success();
    case reply_kind::timeout:
    case reply_kind::cancelled:
      return verdict::retryable();
    case reply_kind::error:
      // Any failure is retried, as the seed's client does; a rejection's Retry-After is honoured.
      return verdict::retryable(r.retry_after);
  }
  return verdict::retryable();
}

using steady = std::chrono::steady_clock;
using executor_type = asio::io_context::executor_type;
using socket_type = asio::basic_stream_socket<tcp, executor_type>;
using timer_type = asio::basic_waitable_timer<steady, asio::wait_traits<steady>, executor_type>;

// Informational answers skipped before an answer; one more is an error.
constexpr int max_interim_replies = 32;

// now + d, saturating (a huge --timeout must not wrap round into the past).
steady::time_point deadline_after(steady::time_point now, duration d) {
  return saturating_add(now, d);
}

// The timeout of a connection's attempt in flight, on one timer of the connection's own that is
// re-armed lazily: an attempt only records its deadline, and the timer, when it fires at an older
// one, moves on to the current deadline. With a fixed timeout the deadlines only grow, so the
// timer wakes about once per timeout per connection instead of being set and cancelled for every
// request (what beast::basic_stream did, with a timer operation per read and write). When the
// deadline of the attempt in flight passes, its socket's operations are cancelled and `fired`
// tells the attempt it timed out. Shared with the timer's handler, which may run after the
// connection is gone (a handler already due when the connection ends still runs): `socket` is
// null then.
struct watchdog : std::enable_shared_from_this<watchdog> {
  explicit watchdog(const executor_type& ex) : timer(ex) {}
  timer_type timer;
  socket_type* socket = nullptr;
  steady::time_point deadline = steady::time_point::max();  // the attempt's; max: none in flight
  steady::time_point armed = steady::time_point::max();     // the wait pending; max: none
  std::uint64_t generation = 0;  // of the wait pending: a handler of an older one does nothing
  bool fired = false;            // the attempt in flight ran out of time

  void arm(steady::time_point now, duration time_allowed) {
    fired = false;
    deadline = deadline_after(now, time_allowed);
    if (deadline < armed) wait_until(deadline);
  }
  void disarm() { deadline = steady::time_point::max(); }

  struct handler {
    std::shared_ptr<watchdog> w;
    std::uint64_t generation;
    void operator()(const boost::system::error_code& ec) const {
      if (!ec && generation == w->generation) w->expired();
    }
  };
  void wait_until(steady::time_point at) {
    armed = at;
    timer.expires_at(at);  // a wait pending for a later time is cancelled (its handler ignored)
    timer.async_wait(handler{shared_from_this(), ++generation});
  }
  void expired() {
    armed = steady::time_point::max();
    if (socket == nullptr || deadline == steady::time_point::max()) return;
    if (steady::now() >= deadline) {
      fired = true;
      deadline = steady::time_point::max();
      boost::system::error_code ignored;
      socket->cancel(ignored);  // the attempt's pending connect, wait or write ends now
    } else {
      wait_until(deadline);
    }
  }
};

// A keep-alive connection of one virtual client; reopened after a timeout or an error (the Go
// client's transport drops a connection whose request timed out). Its socket, timer and the
// coroutines' operations are typed on the io_context's executor rather than any_io_executor:
// the type-erased one cost about 2 % of the open loop's time.
struct connection {
  explicit connection(executor_type ex)
      : executor(ex), socket(ex), watch(std::make_shared<watchdog>(ex)) {
    watch->socket = &socket;
  }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() {
    watch->socket = nullptr;
    watch->timer.cancel();
  }
  executor_type executor;
  socket_type socket;
  std::shared_ptr<watchdog> watch;
  beast::flat_buffer buffer;
  std::string request;  // with propagate_deadline: this attempt's bytes
  void close() {
    watch->disarm();
    if (socket.is_open()) {
      beast::error_code ignored;
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
    }
    buffer.clear();
  }
};

// What the client takes from an answer.
struct reply_head {
  int status = 0;
  bool keep_alive = true;  // as http::message::keep_alive() says
  std::optional<std::string> retry_after;
};

// What the client needs of an answer, parsed without building a message: no allocation per
// header field, and the body (never looked at) skipped as it comes. The limits, the framing
// (Content-Length, chunked, or up to the end of the stream) and the errors are Beast's parser's,
// as http::async_read's were.
class reply_parser final : public http::basic_parser<false> {
 public:
  int status = 0;
  unsigned version = 11;
  std::optional<std::string> retry_after;
  std::optional<std::string> connection_field;  // the first Connection field, when there is one

  // As http::message::keep_alive() judges it (the first Connection field's tokens and the
  // version), not as the parser's own keep_alive(), which the client did not use before.
  reply_head head() const { return {status, message_keep_alive(), retry_after}; }

  bool message_keep_alive() const {
    if (version < 11) {
      return connection_field && http::token_list{*connection_field}.exists("keep-alive");
    }
    return !connection_field || !http::token_list{*connection_field}.exists("close");
  }

 private:
  void on_request_impl(http::verb, beast::string_view, beast::string_view, int,
                       beast::error_code& ec) override {
    ec = http::error::bad_method;  // never called: this parses responses
  }
  void on_response_impl(int code, beast::string_view, int v, beast::error_code&) override {
    status = code;
    version = static_cast<unsigned>(v);
  }
  void on_field_impl(http::field name, beast::string_view, beast::string_view value,
                     beast::error_code&) override {
    if (name == http::field::retry_after && !retry_after) {
      retry_after.emplace(value);
    } else if (name == http::field::connection && !connection_field) {
      connection_field.emplace(value);
    }
  }
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, beast::error_code&) override {}
  std::size_t on_body_impl(beast::string_view body, beast::error_code&) override {
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body,
                                 beast::error_code&) override {
    return body.size();
  }
  void on_finish_impl(beast::error_code&) override {}
};

// Answers met before, by their exact bytes: an answer that begins the buffer with the same bytes
// as one of them parses as it did (Beast's parser is a function of the bytes), so it is taken
// without parsing, by one comparison. Only answers whose end the parser found in them are kept
// (Content-Length, chunked, or no body), not those delimited by the end of the stream. The
// server answers nearly every request with the same bytes; parsing them was a quarter of the
// client's own instructions per request.
class known_replies {
 public:
  static constexpr std::size_t max_bytes = 512;  // longer answers are parsed each time

  struct entry {
    std::string bytes;
    reply_head head;
  };

  // The answer that `data` begins with, or nullptr; `prefix` tells whether `data` is the
  // beginning of a known answer, not all of it (more bytes may make it one).
  const entry* find(std::string_view data, bool& prefix) const {
    prefix = false;
    for (std::size_t i = 0; i < used_; ++i) {
      const std::string& b = entries_[i].bytes;
      if (data.empty()) {  // (memcmp must not see the null pointer of an empty buffer)
        prefix = true;
      } else if (data.size() >= b.size()) {
        if (std::memcmp(data.data(), b.data(), b.size()) == 0) return &entries_[i];
      } else if (std::memcmp(data.data(), b.data(), data.size()) == 0) {
        prefix = true;
      }
    }
    return nullptr;
  }

  void remember(std::string bytes, const reply_head& head) {
    if (bytes.empty()) return;
    entry& e = entries_[next_];
    e.bytes = std::move(bytes);
    e.head = head;
    next_ = (next_ + 1) % entries_.size();
    used_ = std::max(used_, next_ == 0 ? entries_.size() : next_);
  }

 private:
  std::array<entry, 4> entries_;
  std::size_t used_ = 0, next_ = 0;
};

// Feeds the buffered bytes to the parser: {} once the answer is complete (what follows it stays
// in the buffer), need_more, or the parser's error. The bytes the parser took are appended to
// `taken` while it holds no more than known_replies::max_bytes (`too_long` says when it did not).
beast::error_code parse_buffered(beast::flat_buffer& buffer, reply_parser& parser,
                                 std::string& taken, bool& too_long) {
  while (buffer.size() > 0) {
    beast::error_code ec;
    const std::size_t used = parser.put(buffer.data(), ec);
    if (!too_long && used > 0) {
      if (taken.size() + used > known_replies::max_bytes) {
        too_long = true;
      } else {
        taken.append(static_cast<const char*>(buffer.data().data()), used);
      }
    }
    buffer.consume(used);
    if (parser.is_done()) return {};
    if (ec == http::error::need_more) break;
    if (ec) return ec;
    if (used == 0) break;
  }
  if (buffer.size() == buffer.max_size()) return http::error::buffer_overflow;
  return http::error::need_more;
}

// The end of the stream while an answer is awaited: {} when that completes it (a body delimited
// by the close), otherwise the error http::async_read gave.
beast::error_code parse_eof(reply_parser& parser) {
  if (!parser.got_some()) return http::error::end_of_stream;
  beast::error_code ec;
  parser.put_eof(ec);
  if (!ec && parser.is_done()) return {};
  return ec ? ec : http::error::partial_message;
}

// The operations in flight, for their count and, at the end, the unfinished ones: each lives in
// its coroutine's frame, linked into a list while it does (a hash map cost an allocation, a hash
// and three look-ups per operation).
struct in_flight_op;
struct in_flight_list {
  in_flight_op* head = nullptr;
  std::size_t count = 0;
  std::size_t size() const { return count; }
};

struct in_flight_op {
  in_flight_op(in_flight_list& l, std::uint64_t i, report::time_units first,
               report::time_units deadline)
      : id(i), first_attempt(first), deadline_at(deadline), list(&l), next(l.head) {
    if (next != nullptr) next->prev = this;
    l.head = this;
    ++l.count;
  }
  in_flight_op(const in_flight_op&) = delete;
  in_flight_op& operator=(const in_flight_op&) = delete;
  ~in_flight_op() { unlink(); }
  void unlink() {
    if (list == nullptr) return;
    (prev != nullptr ? prev->next : list->head) = next;
    if (next != nullptr) next->prev = prev;
    --list->count;
    list = nullptr;
  }

  std::uint64_t id;
  report::time_units first_attempt = 0;  // open loop: the intended send time
  std::uint32_t attempts = 0;
  report::time_units deadline_at = 0;  // 0: none (request_deadline)
  in_flight_list* list;
  in_flight_op* prev = nullptr;
  in_flight_op* next;
};

// An open-loop send waiting for a connection.
struct queued_send {
  report::time_units intended = 0;
  std::uint64_t seed = 0;
};

// A client's connection and its timer: in the open loop, one of the `connections`, waiting on
// the timer while the queue of sends due is empty (cancelled to wake it); in the closed loop, a
// virtual client, thinking on it.
struct sender {
  explicit sender(const executor_type& ex) : c(ex), wake(ex) {}
  connection c;
  asio::steady_timer wake;
};

struct load_state {
  explicit load_state(const load_options& o)
      : options(o), recorder(make_recorder_options(o), nullptr) {}

  static report::recorder_options make_recorder_options(const load_options& o) {
    report::recorder_options r;
    r.strategy = o.name;
    r.bucket = o.bucket.count();
    r.seconds_per_unit = 1e-9;
    r.outage = o.outage;
    r.phase_goodput = o.phase_goodput;
    return r;
  }

  report::time_units now() const { return (steady_now() - start).count(); }
  // `t` as now() would have said it (one clock reading for two uses).
  report::time_units since_start(steady::time_point t) const {
    return (std::chrono::duration_cast<duration>(t.time_since_epoch()) - start).count();
  }
  static duration steady_now() {
    return std::chrono::duration_cast<duration>(
        std::chrono::steady_clock::now().time_since_epoch());
  }

  const load_options& options;
  report::recorder recorder;
  duration start = steady_now();
  tcp::endpoint endpoint;
  bool stopping = false;
  bool warned_local = false;
  std::uint64_t requests = 0, ok = 0, errors = 0, timeouts = 0, local_errors = 0;
  std::uint64_t late_sends = 0, dropped_sends = 0;
  // This second's completed latencies (microseconds), for histogram_log.
  report::hdr_histogram interval_latency;
  double histogram_logged_s = 0;  // the end of the last line written
  std::uint64_t interval_ok = 0, interval_errors = 0, interval_timeouts = 0;
  report::time_units interval_start = 0;  // when the current report interval began
  std::uint64_t next_op = 0;
  in_flight_list in_flight;
  std::string request_text;  // "GET /api HTTP/1.1" with Host, serialized once
  known_replies known;
  strategy::live guards;  // the budget, throttle and breaker all clients share
  std::unique_ptr<async_window> window;
  // Last: destroyed first, with every coroutine frame still in it, while what they refer to lives.
  std::optional<asio::io_context> context;
  // Open loop: the sends due that wait for a connection, and the senders (one connection each,
  // as wrk's -c; they live in their coroutines' frames) waiting for a send.
  std::deque<queued_send> queued;
  std::vector<sender*> idle_senders;
};

// The request of attempt `attempt`: the prepared bytes, plus, with propagate_deadline, the time
// the server may take and the attempt number (deadline_headers.hpp), before the blank line.
std::string_view request_bytes(load_state& s, connection& c, std::uint32_t attempt) {
  if (!s.options.propagate_deadline) return s.request_text;
  const std::string_view head(s.request_text.data(), s.request_text.size() - 2);  // "\r\n"
  c.request.assign(head);
  c.request += "grpc-timeout: " + format_grpc_timeout(s.options.timeout) + "\r\n";
  c.request += "x-envoy-expected-rq-timeout-ms: " + format_timeout_ms(s.options.timeout) + "\r\n";
  c.request += "x-envoy-attempt-count: " + std::to_string(attempt) + "\r\n";
  if (attempt > 1)
    c.request += "grpc-previous-rpc-attempts: " + std::to_string(attempt - 1) + "\r\n";
  c.request += "\r\n";
  return c.request;
}

// The time an attempt of `op` may take: the timeout, cut to what is left before the operation's
// deadline.
duration attempt_time(load_state& s, const in_flight_op& op) {
  duration t = s.options.timeout;
  if (op.deadline_at) {
    t = std::min(t, duration{std::max<report::time_units>(op.deadline_at - s.now(), 1)});
  }
  return t;
}

// One attempt on `c`: connect if needed, write the request, read the answer, all within
// `time_allowed` (connect, write and read together, as Go's client does).
//
// Most of what made the server fast (issue 8; src/net/server/server.cpp): the request is written
// with one non-blocking send (the rest, if the socket did not take it all, asynchronously) rather
// than a composed write that completes through the scheduler; the answer is read with one plain
// read into the connection's buffer rather than http::async_read's composed one, taken by its
// bytes when it is a known answer (known_replies) and otherwise parsed by a parser that keeps only
// what the client uses; the timeout is the connection's watchdog, not a timer operation per read
// and write (beast::basic_stream). Unlike the server, the client does not wait for readiness
// before reading: Asio re-arms the descriptor with an epoll_ctl for every wait (strace: one per
// request), while its speculative read finds the answer already there whenever the client is
// busy, which is when its cost matters (and costs one EAGAIN when it is idle).
asio::awaitable<reply> send_request(load_state& s, connection& c, std::uint32_t attempt,
                                    duration time_allowed) {
  const steady::time_point started = steady::now();
  s.recorder.attempt(s.since_start(started));
  ++s.requests;
  reply r;
  const auto failed = [&](beast::error_code ec) {
    // The watchdog cancelled the attempt's operation, or its time ran out while it completed.
    if (c.watch->fired) ec = beast::error::timeout;
    c.close();
    if (ec == asio::error::operation_aborted) {
      // A hedge's loser, cancelled when another copy won: neither an error nor a timeout.
      r.kind = reply_kind::cancelled;
    } else if (ec == beast::error::timeout) {
      r.kind = reply_kind::timeout;
      ++s.timeouts;
      ++s.interval_timeouts;
      s.recorder.timeout(s.now());
    } else if (is_local_error(ec)) {
      // Not the server's: retried as any error, counted apart, said once.
      r.kind = reply_kind::error;
      ++s.local_errors;
      if (!s.warned_local) {
        s.warned_local = true;
        if (s.options.on_first_local_error) s.options.on_first_local_error(ec.message());
      }
    } else {
      r.kind = reply_kind::error;
      ++s.errors;
      ++s.interval_errors;
      s.recorder.error(s.now());
    }
  };
  c.watch->arm(started, time_allowed);
  if (!c.socket.is_open()) {
    const auto [ec] = co_await c.socket.async_connect(s.endpoint, as_tuple_awaitable);
    if (ec || c.watch->fired) {
      failed(ec);
      co_return r;
    }
    beast::error_code ec2;
    c.socket.non_blocking(true, ec2);  // the request's send and the answer's reads never block
    if (ec2) {
      failed(ec2);
      co_return r;
    }
  }
  {
    // The same bytes every time: written as they are, without a serializer per request.
    const asio::const_buffer bytes = asio::buffer(request_bytes(s, c, attempt));
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
    if (ec || c.watch->fired) {
      failed(ec);
      co_return r;
    }
  }
  // The answer: a known one by its bytes, or else through the parser (known_replies). An
  // informational answer (1xx but 101: 100 Continue, 103 Early Hints) comes before it and is
  // skipped (RFC 9110 section 15.2); taking it as the answer gave the real one to the next request.
  reply_head head;
  for (int interim = 0;; ++interim) {
    std::optional<reply_parser> parser;  // engaged once the bytes are not those of a known answer
    std::string taken;                   // the bytes the parser took, to remember the answer by
    bool too_long = false;
    const auto start_parser = [&] {
      parser.emplace();
      parser->eager(true);  // header and body in one put when they came together
    };
    for (;;) {
      beast::error_code ec;
      if (!parser) {
        const auto data = c.buffer.data();
        bool prefix = false;
        if (const known_replies::entry* known = s.known.find(
                std::string_view(static_cast<const char*>(data.data()), data.size()), prefix)) {
          head = known->head;
          c.buffer.consume(known->bytes.size());
          break;
        }
        if (!prefix) start_parser();
      }
      if (parser) {
        ec = parse_buffered(c.buffer, *parser, taken, too_long);
        if (!ec) {
          head = parser->head();
          if (!too_long) s.known.remember(std::move(taken), head);
          break;
        }
        if (ec != http::error::need_more) {
          failed(ec);
          co_return r;
        }
      }
      // A plain read, not http::async_read's composed one (and not a wait for readiness, which
      // costs an epoll_ctl per request: Asio re-arms the descriptor for every wait).
      std::size_t n = 0;
      std::tie(ec, n) = co_await c.socket.async_read_some(
          c.buffer.prepare(beast::read_size(c.buffer, 65536)), as_tuple_awaitable);
      if (c.watch->fired) {
        failed(ec);
        co_return r;
      }
      if (ec && ec == asio::error::eof) {
        if (!parser) {
          // The beginning of a known answer, or nothing: the parser judges the end as before.
          start_parser();
          ec = parse_buffered(c.buffer, *parser, taken, too_long);
          if (!ec) {
            head = parser->head();
            break;
          }
          if (ec != http::error::need_more) {
            failed(ec);
            co_return r;
          }
        }
        ec = parse_eof(*parser);
        if (ec) {
          failed(ec);
          co_return r;
        }
        head = parser->head();
        break;
      }
      if (ec) {
        failed(ec);
        co_return r;
      }
      c.buffer.commit(n);
    }
    if (head.status < 100 || head.status >= 200 || head.status == 101) break;
    if (interim == max_interim_replies) {
      failed(http::error::bad_status);  // a server that only ever says "wait"
      co_return r;
    }
  }
  c.watch->disarm();
  r.status = head.status;
  if (!head.keep_alive) c.close();
  if (r.status == 200) {
    r.kind = reply_kind::ok;
    ++s.ok;
    ++s.interval_ok;
    s.recorder.success(s.now());
  } else {
    r.kind = reply_kind::error;
    if (head.retry_after) {
      r.retry_after = parse_retry_after(*head.retry_after, std::chrono::system_clock::now());
    }
    ++s.errors;
    ++s.interval_errors;
    s.recorder.error(s.now());
  }
  co_return r;
}

// What an operation's attempts need, in the client loop's frame.
struct operation_ref {
  load_state* s;
  connection* c;
  in_flight_op* flight;
};

// One attempt of an operation, as async_retry wants it (a plain function object returning the
// named coroutine's awaitable: GCC 12 mishandles capturing coroutine lambdas). One pointer, not
// three: async_retry's coroutine frame holds a copy, and with three it came to 1032 bytes, just
// past what glibc's per-thread cache serves (1032 with Asio's byte of bookkeeping is a 1040-byte
// allocation): each operation then paid for a trip through malloc's bins.
struct attempt_op {
  const operation_ref* o;
  asio::awaitable<reply> operator()(std::uint32_t attempt) const {
    o->flight->attempts = attempt;
    return send_request(*o->s, *o->c, attempt, attempt_time(*o->s, *o->flight));
  }
};

// A hedged copy's verdict (hedge.hpp): a status answer is judged by the policy's non_fatal list
// (pushback when it carries Retry-After); a copy that got no answer at all (timeout, refused,
// reset) is non-fatal, since no server judged the request.
struct classify_hedged_reply {
  const hedge_policy* policy;
  verdict operator()(const reply& r) const {
    if (r.kind == reply_kind::error && r.status != 0) {
      return policy->classify_status(r.status, r.retry_after);
    }
    return classify_reply(r);
  }
};

// Copy n of a hedged operation: the first on the client's kept-alive connection, the others on
// connections of their own, closed when they end.
asio::awaitable<reply> send_copy(load_state& s, std::uint32_t attempt, duration time_allowed) {
  connection own(s.context->get_executor());
  reply r = co_await send_request(s, own, attempt, time_allowed);
  own.close();
  co_return r;
}

struct hedged_copy_op {
  const operation_ref* o;
  asio::awaitable<reply> operator()(std::uint32_t attempt) const {
    o->flight->attempts = attempt;
    const duration allowed = attempt_time(*o->s, *o->flight);
    return attempt == 1 ? send_request(*o->s, *o->c, attempt, allowed)
                        : send_copy(*o->s, attempt, allowed);
  }
};

// One of the run's clients, and the operations it runs one after another on its connection.
//
// Closed loop (`closed_index`): a virtual client that thinks for an exponential time and then
// runs an operation from now, on its own kept-alive connection.
// Open loop: one of the `connections`, taking the sends due in order. A send is late when it
// starts more than late_after after its intended time (the generator fell behind, or every
// connection was busy), and dropped when its deadline passed before it could start; its
// operation counts from its intended time.
//
// Each operation runs in this coroutine's frame (its retries through async_retry, or its copies
// through async_hedge) rather than in a coroutine of its own: a frame per operation was a
// memory allocation per request, most of them past Asio's two-frame cache.
asio::awaitable<void> client_loop(load_state& s, std::optional<std::uint32_t> closed_index) {
  sender w(s.context->get_executor());  // in the frame: it lives as long as the loop
  connection& c = w.c;
  const bool closed = closed_index.has_value();
  random_generator rng(closed ? derive_seed(s.options.seed, *closed_index) : 0);
  const double mean_ns = static_cast<double>(s.options.think_mean.count());
  for (;;) {
    duration think{0};
    report::time_units start = 0;  // open loop: the intended send time; closed loop: now
    if (closed) {
      think = duration{static_cast<std::int64_t>(exponential_variate(rng, mean_ns))};
      if (think.count() > 0) {  // --lambda 0: back to back, without a trip through the timers
        w.wake.expires_after(think);
        co_await w.wake.async_wait(as_tuple_awaitable);
      }
      if (s.stopping) break;
      start = s.now();
    } else {
      while (s.queued.empty()) {
        if (s.stopping) co_return;
        s.idle_senders.push_back(&w);
        w.wake.expires_at(asio::steady_timer::time_point::max());
        co_await w.wake.async_wait(as_tuple_awaitable);
        if (s.stopping) co_return;
      }
      const queued_send next = s.queued.front();
      s.queued.pop_front();
      const report::time_units behind = s.now() - next.intended;
      if (s.options.request_deadline.count() > 0 && behind >= s.options.request_deadline.count()) {
        ++s.dropped_sends;
        continue;
      }
      if (behind > s.options.late_after.count()) ++s.late_sends;
      rng = random_generator(next.seed);
      start = next.intended;
    }

    const std::uint64_t id = s.next_op++;
    s.recorder.operation_started(start);
    const report::time_units deadline_at =
        s.options.request_deadline.count() > 0 ? start + s.options.request_deadline.count() : 0;
    in_flight_op flight(s.in_flight, id, start, deadline_at);
    // The library keeps the deadline between attempts (no wait runs into it, no attempt starts
    // after it); attempt_time() cuts the attempt in flight. The library measures max_elapsed from
    // its first reading of env.now, which is made to be the reading `left` comes from: read
    // again, the clock would have moved on (far, on a loaded machine), the library's deadline
    // would fall after the operation's, and an attempt timed out at the operation's deadline
    // would be followed by one more, sent with no time left.
    const duration read_at = load_state::steady_now();
    const duration left{
        deadline_at ? std::max<report::time_units>(deadline_at - (read_at - s.start).count(), 1)
                    : 0};
    retry_policy policy{s.options.strategy.policy, s.options.strategy.max_attempts, left};
    async_retry_env env;
    env.now = [read_at, first = true]() mutable {
      if (!first) return load_state::steady_now();
      first = false;
      return read_at;
    };
    env.random = rng;
    if (s.options.grow_from_think) env.continue_from = think;
    const retry_gates gates = s.guards.gates();
    const operation_ref ref{&s, &c, &flight};
    const attempt_op op{&ref};
    retry_result<reply> result;
    if (const auto& hedge = s.options.strategy.hedge) {
      hedge_options<classify_hedged_reply> options{*hedge, classify_hedged_reply{&*hedge}, gates,
                                                   left};
      const auto hedged = co_await async_hedge(hedged_copy_op{&ref}, std::move(options), env);
      result.why = hedged.why;
      result.attempts = hedged.attempts;
    } else if (s.window) {
      result =
          co_await async_retry(*s.window, op, policy, classify_reply, env, no_retry_hook{}, gates);
    } else {
      result = co_await async_retry(op, policy, classify_reply, env, no_retry_hook{}, gates);
    }
    flight.unlink();
    report::op_record record{};
    record.id = id;
    record.first_attempt = flight.first_attempt;
    record.done = s.now();
    record.attempts = std::max(flight.attempts, result.attempts);
    record.status = result ? report::op_status::completed : report::op_status::failed;
    s.recorder.operation_done(record);
    if (result && s.options.histogram_log) {
      s.interval_latency.record((record.done - record.first_attempt + 500) / 1000);
    }
    if (closed && s.stopping) break;
  }
  c.close();
}

// The rate's points: the ramp, or one point for a fixed rate.
std::vector<rate_point> rate_points(const load_options& o) {
  if (!o.ramp.empty()) return o.ramp;
  return {rate_point{duration{0}, o.rate_per_s}};
}

// Sends at the schedule's times, each waited for on the absolute clock (a late wake-up does not
// push the later sends back): behind schedule, the sends due go at once, in order, each with its
// own intended time. The generator wakes on a grid of send_tick: a wake-up (a timerfd update and a
// trip through the kernel) per tick rather than per send, which at 50,000 sends per second was a
// fifth of the generator's time. A send goes at most send_tick after its time, and its latency
// counts from its time all the same.
constexpr duration send_tick = std::chrono::microseconds(100);

asio::awaitable<void> open_loop_arrivals(load_state& s) {
  arrival_schedule schedule(s.options.arrival, rate_points(s.options),
                            derive_seed(s.options.seed, 0xA11));
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto origin = std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(s.start));
  // The clock as last read: a send due by then is due now, without reading it again (behind
  // schedule, the sends due go out in bursts, and a reading each was a clock call per send).
  auto last_read = std::chrono::steady_clock::time_point::min();
  for (std::uint64_t n = 0;; ++n) {
    const std::optional<duration> at = schedule.next();
    if (!at || *at >= s.options.duration_total) break;
    const auto due = origin + *at;
    if (due > last_read) last_read = std::chrono::steady_clock::now();
    if (due > last_read) {
      const duration wake = (*at + send_tick - duration{1}) / send_tick * send_tick;
      timer.expires_at(origin + wake);
      co_await timer.async_wait(as_tuple_awaitable);
    }
    if (s.stopping) break;
    if (s.in_flight.size() + s.queued.size() >= s.options.max_in_flight) {
      ++s.dropped_sends;
      continue;
    }
    s.queued.push_back({at->count(), derive_seed(s.options.seed, n + 1)});
    if (!s.idle_senders.empty()) {
      s.idle_senders.back()->wake.cancel();  // the most recently used: its connection is warm
      s.idle_senders.pop_back();
    }
  }
}

// The histogram since the last line, as a line ending at `end_s`; resets it.
void write_histogram_interval(load_state& s, double end_s) {
  *s.options.histogram_log << report::hdr_log_line(
      s.histogram_logged_s, end_s - s.histogram_logged_s, s.interval_latency, 1e6);
  s.histogram_logged_s = end_s;
  s.interval_latency.reset();
}

// One line of the histogram log per second from the start (HdrHistogram's interval log).
asio::awaitable<void> histogram_logger(load_state& s) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto origin = std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(s.start));
  for (std::int64_t k = 1;; ++k) {
    timer.expires_at(origin + std::chrono::seconds(k));
    co_await timer.async_wait(as_tuple_awaitable);
    if (s.stopping) break;
    write_histogram_interval(s, static_cast<double>(k));
  }
}

// The rates since the last line; resets the interval's counters.
interval_report take_interval(load_state& s) {
  const report::time_units now = s.now();
  const double span = static_cast<double>(now - s.interval_start) * 1e-9;
  s.interval_start = now;
  interval_report r;
  r.at_s = static_cast<double>(now) * 1e-9;
  if (span > 0) {
    r.ok_per_s = static_cast<double>(s.interval_ok) / span;
    r.errors_per_s = static_cast<double>(s.interval_errors) / span;
    r.timeouts_per_s = static_cast<double>(s.interval_timeouts) / span;
  }
  r.in_flight = s.in_flight.size();
  s.interval_ok = s.interval_errors = s.interval_timeouts = 0;
  return r;
}

// One line every report_every from the start, on a fixed schedule (deadline k x period, not
// "period after the last line"), so a collapse that keeps the thread busy does not stretch the
// period: a late line covers the time since the one before, and the schedule goes on from the
// next deadline still ahead.
asio::awaitable<void> reporter(load_state& s,
                               const std::function<void(const interval_report&)>& report) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto origin = std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(s.start));
  const auto period = s.options.report_every;
  auto next = origin + period;
  for (;;) {
    timer.expires_at(next);
    co_await timer.async_wait(as_tuple_awaitable);
    if (s.stopping) break;
    const interval_report r = take_interval(s);
    if (report) report(r);
    const auto now = std::chrono::steady_clock::now();
    while (next <= now) next += period;
  }
}

// The server's concurrency once per bucket (when the caller can see it), and the end of the run.
asio::awaitable<void> clock(load_state& s, const std::function<bool()>& stop) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const duration poll = std::chrono::milliseconds(100);
  duration next_sample = duration{0};
  for (;;) {
    const duration elapsed{s.now()};
    if (elapsed >= s.options.duration_total || (stop && stop())) break;
    if (s.options.server_concurrency && elapsed >= next_sample) {
      s.recorder.load(s.now(), s.options.server_concurrency(), 0);
      next_sample += s.options.bucket;
    }
    timer.expires_after(std::min(poll, s.options.duration_total - elapsed));
    co_await timer.async_wait(as_tuple_awaitable);
  }
  s.stopping = true;
  s.context->stop();
}

}  // namespace
}  // namespace load_detail

bool is_local_error(const boost::system::error_code& ec) {
  namespace errc = boost::system::errc;
  return ec == errc::too_many_files_open || ec == errc::too_many_files_open_in_system ||
         ec == errc::no_buffer_space || ec == errc::not_enough_memory ||
         ec == errc::address_not_available;
}

http_target parse_target(std::string_view url) {
  const auto fail = [&](std::string_view why) {
    throw parse_error("bad --url " + quote_for_message(url) + ": " + std::string(why));
  };
  constexpr std::string_view scheme = "http://";
  if (url.substr(0, 8) == "https://") fail("https is not supported (the harness is loopback HTTP)");
  if (url.substr(0, scheme.size()) != scheme) fail("expected http://HOST[:PORT][/PATH]");
  std::string_view rest = url.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  http_target t;
  t.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  const std::size_t colon = authority.rfind(':');
  const std::string_view host = authority.substr(0, colon);
  if (host.empty()) fail("no host");
  t.host = std::string(host);
  if (colon != std::string_view::npos) {
    const std::string_view port = authority.substr(colon + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0 ||
        value > 65535) {
      fail("bad port " + quote_for_message(port));
    }
    t.port = static_cast<std::uint16_t>(value);
  } else {
    t.port = 80;
  }
  return t;
}

std::string format_report(const interval_report& r) {
  return fmt::format("OK: {:.2f} req/sec, errors: {:.2f} req/sec, timedout: {:.2f} req/sec",
                     r.ok_per_s, r.errors_per_s, r.timeouts_per_s);
}

load_run run_load(const load_options& options,
                  const std::function<void(const interval_report&)>& report,
                  const std::function<bool()>& stop) {
  using namespace load_detail;
  load_state s(options);
  // Everything runs on this thread, and nothing posts to the context from another: the scheduler
  // and the reactor need no locks.
  s.context.emplace(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE);
  {
    tcp::resolver resolver(*s.context);
    boost::system::error_code ec;
    const auto results =
        resolver.resolve(options.target.host, std::to_string(options.target.port), ec);
    // The error_code overload: Boost's exception text carries its own source location.
    if (ec || results.empty()) {
      throw std::runtime_error("cannot resolve " + quote_for_message(options.target.host) + ": " +
                               (ec ? ec.message() : std::string("no address")));
    }
    s.endpoint = *results.begin();
  }
  {
    http::request<http::empty_body> req{http::verb::get, options.target.path, 11};
    req.set(http::field::host, options.target.host);
    req.keep_alive(true);
    std::ostringstream text;
    text << req;
    s.request_text = text.str();
  }
  // The budget, breaker and throttle are the strategy's own (gates below); the window is the
  // Asio one, which suspends a coroutine rather than a thread.
  s.guards = options.strategy.instantiate();
  s.guards.window.reset();
  if (const auto& window = options.strategy.window) {
    s.window = std::make_unique<async_window>(s.context->get_executor(), *window);
  }
  const auto wall_start = std::chrono::steady_clock::now();
  s.start = load_state::steady_now();
  if (options.histogram_log) {
    *options.histogram_log << report::hdr_log_header(
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
        "Values in microseconds from the intended send time; Interval_Max in seconds");
    asio::co_spawn(*s.context, histogram_logger(s), asio::detached);
  }
  if (options.rate_per_s > 0 || !options.ramp.empty()) {
    for (std::uint32_t i = 0; i < options.connections; ++i) {
      asio::co_spawn(*s.context, client_loop(s, std::nullopt), asio::detached);
    }
    asio::co_spawn(*s.context, open_loop_arrivals(s), asio::detached);
  } else {
    for (std::uint32_t i = 0; i < options.clients; ++i) {
      asio::co_spawn(*s.context, client_loop(s, i), asio::detached);
    }
  }
  asio::co_spawn(*s.context, reporter(s, report), asio::detached);
  asio::co_spawn(*s.context, clock(s, stop), asio::detached);
  s.context->run();
  // The last, partial window (a run rarely ends on a line's deadline) gets its line too, unless it
  // is a sliver left by a line printed just before the end (its rates would be noise).
  const report::time_units sliver =
      std::min<report::time_units>(options.report_every.count() / 10, 100'000'000);
  if (report && s.now() - s.interval_start >= sliver) report(take_interval(s));
  const report::time_units end = s.now();
  for (const in_flight_op* op = s.in_flight.head; op != nullptr; op = op->next) {
    report::op_record record{};
    record.id = op->id;
    record.first_attempt = op->first_attempt;
    record.done = end;
    record.attempts = op->attempts;
    record.status = report::op_status::unfinished;
    s.recorder.operation_done(record);
  }
  // Sends still waiting for a connection were meant to go: unfinished operations, never sent.
  for (const queued_send& q : s.queued) {
    s.recorder.operation_started(q.intended);
    s.recorder.operation_done({s.next_op++, q.intended, end, 0, report::op_status::unfinished});
  }
  s.context.reset();  // ends the coroutines while what they refer to still lives
  if (options.histogram_log) {
    // The last, partial second.
    const double end_s = static_cast<double>(end) * 1e-9;
    if (end_s > s.histogram_logged_s || s.interval_latency.count() > 0) {
      write_histogram_interval(s, end_s);
    }
  }

  load_run run;
  run.summary = s.recorder.finish(end, s.requests);
  run.requests = s.requests;
  run.ok = s.ok;
  run.errors = s.errors;
  run.timeouts = s.timeouts;
  run.late_sends = s.late_sends;
  run.dropped_sends = s.dropped_sends;
  run.local_errors = s.local_errors;
  run.summary.fields.push_back({"late_sends", static_cast<double>(s.late_sends)});
  run.summary.fields.push_back({"dropped_sends", static_cast<double>(s.dropped_sends)});
  run.summary.fields.push_back({"local_errors", static_cast<double>(s.local_errors)});
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return run;
}

}  // namespace backoff::net
