// SPDX-License-Identifier: Apache-2.0
#include "proxy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <mutex>
#include <random>
#include <sstream>
#include <system_error>
#include <thread>

#include "backoff/duration.hpp"
#include "backoff/http.hpp"
#include "backoff/random.hpp"
#include "net/common/connections.hpp"
#include "net/common/loop.hpp"
#include "net/common/sockets.hpp"
#include "net/proxy/rewrite.hpp"
#include "net/server/handler.hpp"
#include "net/server/server.hpp"

namespace backoff::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

}  // namespace

// The proxy's internals, in a namespace of their own: backoff_net may be built as one unity
// source, where every file's anonymous namespace is the same one.
namespace proxy_detail {
namespace {

// Informational answers relayed before an answer: more is an upstream that never answers (502).
constexpr int max_interim_answers = 32;

// What a step of the relay came to.
enum class step {
  ok,
  failed,   // the socket failed or the peer left
  timeout,  // the deadline of the connection's phase passed
  closed,   // a toxic closed the connection (limit_data, timeout)
  gone,     // the proxy stops, the connection was reset (reset_peer, a reset fault), or the
            // client left mid-request: nothing more to say on it
};

// Why an upstream gave no usable answer header: the deadline passed (timeout), it does not parse
// or is too large (bad_response), or the connection closed or reset first.
upstream_error answer_header_failure(const beast::error_code& ec, bool timed_out) {
  if (timed_out) return upstream_error::timeout;
  const bool bad =
      is_parse_error(ec) || ec == http::error::buffer_overflow || ec == http::error::header_limit;
  return bad ? upstream_error::bad_response : upstream_error::reset;
}

std::string_view answer_failure_text(upstream_error kind) {
  switch (kind) {
    case upstream_error::timeout:
      return "upstream timeout\n";
    case upstream_error::bad_response:
      return "bad response from upstream\n";
    default:
      return "upstream closed the connection\n";
  }
}

struct shared_state {
  const proxy_options& options;
  proxy_metrics& metrics;
  std::vector<tcp::endpoint> upstream;  // resolved once
  std::string pseudonym;                // this proxy in Via: "backoff-" and 16 random hex digits
  steady::time_point started = steady::now();
  bool stopping = false;
};

// One client connection and its upstream connection: the per-connection layer. Its coroutines
// run in the session's frame, which owns it.
class connection {
 public:
  connection(shared_state& s, socket_type& client, connection_entry& entry, std::uint64_t number)
      : s_(s),
        o_(s.options),
        client_(client),
        upstream_(client.get_executor()),
        waiter_(client.get_executor()),
        entry_(entry),
        rng_(derive_seed(s.options.seed, number)),
        client_buffer_(request_header_limit),
        upstream_buffer_(response_header_limit),
        chunk_(relay_chunk) {
    entry_.upstream = &upstream_;
    entry_.waiter = &waiter_;
  }
  ~connection() {
    close_connection(upstream_);
    entry_.upstream = nullptr;
    entry_.waiter = nullptr;
  }

  task<> run() {
    toxics_ = draw_toxics(o_.toxics, rng_);
    s_.metrics.toxics_applied(toxics_.applied);
    if (toxics_.reset_after) {
      if (toxics_.reset_after->count() == 0) {
        reset_connection(client_);
        co_return;
      }
      entry_.lifetime_end = saturating_add(opened_, *toxics_.reset_after);
    }
    bool first = true;
    for (;;) {
      const step served = co_await serve_one(first);
      first = false;
      if (served != step::ok) break;
    }
  }

 private:
  // The proxy stops, or the table closed the connection (evicted, reset_peer).
  bool stopped() const { return s_.stopping || entry_.closing.has_value(); }

  // The read of a body's next piece into chunk_, within `timeout` (the caller clears the deadline
  // once it completes). An operation to co_await, not a coroutine: no frame per piece.
  template <class Parser>
  auto read_body_piece(socket_type& from, beast::flat_buffer& buffer, Parser& parser,
                       duration timeout) {
    parser.get().body().data = chunk_.data();
    parser.get().body().size = chunk_.size();
    entry_.expect_within(timeout);
    return http::async_read(from, buffer, parser, on_loop);
  }

  // Reads, decides, forwards and answers one request; ok when the connection goes on.
  task<step> serve_one(bool first) {
    request_relay_parser parser;
    parser.header_limit(request_header_limit);
    parser.body_limit(boost::none);  // bodies are relayed in chunks, never held whole
    if (client_buffer_.size() == 0) {
      // No byte of a request yet: the idle timeout (the header timeout for a new connection).
      entry_.enter(connection_entry::phase::idle);
      entry_.expect_within(first ? o_.header_timeout : o_.idle_timeout);
      const auto [ec] = co_await client_.async_wait(tcp::socket::wait_read, on_loop);
      if (ec || stopped() || entry_.timed_out) co_return step::failed;
    }
    entry_.enter(connection_entry::phase::reading);
    entry_.expect_within(o_.header_timeout);
    const auto [read_error, unused] =
        co_await http::async_read_header(client_, client_buffer_, parser, on_loop);
    entry_.no_deadline();
    entry_.enter(connection_entry::phase::busy);
    if (stopped()) co_return step::gone;
    if (read_error) {
      if (entry_.timed_out) {
        co_await answer_and_close(http::status::request_timeout, "request header timeout\n");
      } else if (is_parse_error(read_error) || read_error == http::error::buffer_overflow ||
                 read_error == http::error::header_limit) {
        co_await answer_and_close(http::status::bad_request,
                                  "bad request: " + read_error.message() + "\n");
      }
      co_return step::failed;
    }
    auto& req = parser.get();
    if (const auto refused = refuse_framing(req)) {
      // Its body cannot be framed, so nothing after it on the connection can be trusted either:
      // neither forwarded nor read on.
      co_await answer_and_close(refused->status, refused->why + "\n");
      co_return step::closed;
    }
    const bool keep_alive = req.keep_alive();
    const unsigned version = req.version();
    const std::string_view path = path_of(req.target());

    // A request that passed through this proxy before: it points at itself, directly or through
    // other proxies. Answered at once rather than forwarded round again (each round a new
    // connection, until descriptors run out).
    const auto via = req.equal_range(http::field::via);
    for (auto it = via.first; it != via.second; ++it) {
      if (std::string_view(it->value()).find(s_.pseudonym) != std::string_view::npos) {
        const step drained = co_await discard_body(parser);
        if (drained == step::closed) co_return step::closed;
        auto res = make_response(http::status::loop_detected,
                                 "loop detected: this request already passed through this proxy "
                                 "(its Via names it); is the upstream this proxy?\n",
                                 version, keep_alive && drained == step::ok);
        co_return co_await answer(res, false);
      }
    }

    if (req.method() == http::verb::get && path == o_.metrics_path) {
      const step drained = co_await discard_body(parser);
      if (drained == step::closed) co_return step::closed;
      auto res = make_response(http::status::ok, prometheus_text(s_.metrics), version,
                               keep_alive && drained == step::ok);
      res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      co_return co_await answer(res, false);
    }

    std::optional<faults::slow_body_plan> slow;
    if (!o_.faults.empty()) {
      const faults::request_view view{path, [&req](std::string_view name) {
                                        const auto it = req.find(name);
                                        return it == req.end() ? std::string_view{}
                                                               : std::string_view(it->value());
                                      }};
      const faults::fault_decision d = faults::decide(
          o_.faults, std::chrono::duration_cast<duration>(steady::now() - s_.started), view, rng_);
      if (d.any()) s_.metrics.faults_fired(d.fired);
      if (d.reset) {
        reset_connection(client_);
        co_return step::gone;
      }
      if (d.hold_until || d.delay.count() > 0) {
        auto until = saturating_add(steady::now(), d.delay);
        if (d.hold_until) until = std::max(until, saturating_add(s_.started, *d.hold_until));
        if (!co_await wait_for_fault(until)) co_return step::gone;
      }
      if (d.abort_status) {
        const int status = *d.abort_status;
        const step drained = co_await discard_body(parser);
        if (drained == step::closed) co_return step::closed;
        // 204 and 304 have no body (RFC 9110 sections 15.3.5 and 15.4.5), as serve answers.
        auto res = make_response(static_cast<http::status>(status),
                                 status == 204 || status == 304 ? "" : "injected fault\n", version,
                                 keep_alive && drained == step::ok);
        co_return co_await answer(res, true);
      }
      slow = d.slow;
    }
    co_return co_await forward(parser, slow);
  }

  // Forwards the request in `parser` (its header read) and relays the answer.
  task<step> forward(request_relay_parser& parser, std::optional<faults::slow_body_plan> slow) {
    auto& req = parser.get();
    const bool client_keep_alive = req.keep_alive();
    const unsigned version = req.version();
    const bool head = req.method() == http::verb::head;
    const bool has_body = !parser.is_done();
    // Expect: 100-continue is answered here, as nginx does: the client sends its body to the
    // proxy, which relays it with the request.
    const bool expects_continue =
        beast::iequals(req[http::field::expect], "100-continue") && version == 11;
    req.erase(http::field::expect);
    rewrite_request(req, parser,
                    {o_.upstream_host, o_.upstream_port, o_.rewrite_host, s_.pseudonym});
    // What goes upstream is this header, fixed now: Beast's parser adds a chunked body's trailer
    // fields to the message it parses into, and the serializer sends the header only with the
    // body's first bytes, by when a short body's trailers ("Host: elsewhere") are in. Trailers
    // are dropped (RFC 9110 section 6.5.1: never merged into the header).
    http::request<http::buffer_body> outgoing{req.base()};

    for (int attempt = 0;; ++attempt) {
      bool fresh = false;
      if (upstream_.is_open() &&
          (upstream_buffer_.size() > 0 || probe_peer(upstream_) != peer_state::quiet)) {
        close_upstream();  // closed while idle, or talking out of turn: not reusable
      }
      if (!upstream_.is_open()) {
        const step connected = co_await connect_upstream();
        if (connected == step::gone) co_return connected;
        if (connected != step::ok) {
          const bool refused = connected == step::failed;
          co_return co_await upstream_failure(
              refused ? upstream_error::refused : upstream_error::timeout,
              refused ? "upstream refused the connection\n" : "upstream connect timeout\n", version,
              client_keep_alive && !has_body);
        }
        fresh = true;
      }
      const step sent = co_await send_request(parser, outgoing, has_body, expects_continue);
      if (sent == step::gone || sent == step::closed) co_return sent;
      if (sent != step::ok) {
        close_upstream();
        if (sent == step::failed && !fresh && !has_body && attempt == 0) continue;  // went stale
        co_return co_await upstream_failure(
            sent == step::timeout ? upstream_error::timeout : upstream_error::reset,
            "upstream connection failed\n", version, client_keep_alive && parser.is_done());
      }

      // The answer's header. Informational answers (1xx, RFC 9110 section 15.2) come before it:
      // relayed to an HTTP/1.1 client as they come (a 103's hints are of use to it), dropped
      // for an HTTP/1.0 one, which has none. A 101 is no answer here: the proxy never forwards
      // Upgrade, so an upstream that switches protocols answered something else.
      std::optional<response_relay_parser> answer_parser;
      beast::error_code header_error;
      for (int interim = 0;; ++interim) {
        answer_parser.emplace();
        answer_parser->header_limit(response_header_limit);
        answer_parser->body_limit(boost::none);
        if (head) answer_parser->skip(true);
        entry_.expect_within(o_.upstream_timeout);
        std::tie(header_error, std::ignore) =
            co_await http::async_read_header(upstream_, upstream_buffer_, *answer_parser, on_loop);
        entry_.no_deadline();
        if (header_error || stopped()) break;
        const int code = answer_parser->get().result_int();
        if (code >= 200) break;
        if (code == 101 || interim == max_interim_answers) {
          header_error = http::error::bad_status;
          break;
        }
        if (version == 11) {
          const step relayed = co_await relay_interim(answer_parser->get());
          if (relayed != step::ok) co_return relayed;
        }
        // The rest of an informational answer is its header: nothing more to read.
      }
      if (stopped()) co_return step::gone;
      if (header_error) {
        const bool timed_out = entry_.timed_out;
        const bool nothing =
            header_error == http::error::end_of_stream && !answer_parser->got_some();
        close_upstream();
        // A kept-alive connection the server closed just as the request went out: once more on
        // a new connection, when the request can be sent again (no body was relayed).
        if (nothing && !fresh && !has_body && attempt == 0) continue;
        const upstream_error kind = answer_header_failure(header_error, timed_out);
        co_return co_await upstream_failure(kind, answer_failure_text(kind), version,
                                            client_keep_alive);
      }
      // A pause (outage(action=pause)) stops the proxy as SIGSTOP would: the answer's header
      // leaves when it ends.
      if (const auto until = faults::paused_until(
              o_.faults, std::chrono::duration_cast<duration>(steady::now() - s_.started))) {
        if (!co_await wait_for_fault(saturating_add(s_.started, *until))) co_return step::gone;
      }
      co_return co_await relay_answer(*answer_parser, version, client_keep_alive, slow);
    }
  }

  // Sends the request in `parser` upstream: `outgoing`'s header, then the body as it comes from
  // the client, chunk by chunk (after a 100 Continue when the client waits for one). ok; the
  // upstream's failure (failed, timeout); closed (a toxic closed it, or a body that does not
  // parse, answered 400 here); gone (the proxy stops, or the client left mid-request).
  task<step> send_request(request_relay_parser& parser, http::request<http::buffer_body>& outgoing,
                          bool has_body, bool expects_continue) {
    auto& req = parser.get();
    http::request_serializer<http::buffer_body> out{outgoing};
    outgoing.body().data = nullptr;
    outgoing.body().more = has_body;
    step sent = co_await write_ready(upstream_, out, toxics_.upstream, toxic_stream::upstream, 0);
    if (sent == step::ok && expects_continue && has_body) {
      static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
      entry_.expect_within(o_.header_timeout);
      const auto [ec, n] = co_await asio::async_write(client_, asio::buffer(go_on), on_loop);
      entry_.no_deadline();
      if (ec || stopped()) co_return step::gone;
    }
    while (sent == step::ok && !parser.is_done()) {
      auto [ec, n] = co_await read_body_piece(client_, client_buffer_, parser, o_.header_timeout);
      entry_.no_deadline();
      if (ec == http::error::need_buffer) ec = {};  // chunk_ is full: no error
      if (stopped()) co_return step::gone;
      if (is_parse_error(ec)) {
        // A bad chunk size or extension: the upstream has part of a request it must not
        // answer, and the client gets a 400 rather than a silent close.
        close_upstream();
        co_await answer_and_close(http::status::bad_request, "bad request: " + ec.message() + "\n");
        co_return step::closed;
      }
      if (ec) co_return step::gone;  // the client left
      outgoing.body().size = chunk_.size() - req.body().size;
      outgoing.body().data = chunk_.data();
      outgoing.body().more = !parser.is_done();
      sent = co_await write_ready(upstream_, out, toxics_.upstream, toxic_stream::upstream, 0);
    }
    if (sent == step::ok && !out.is_done()) {
      outgoing.body().data = nullptr;
      outgoing.body().size = 0;
      outgoing.body().more = false;
      sent = co_await write_ready(upstream_, out, toxics_.upstream, toxic_stream::upstream, 0);
    }
    co_return sent;
  }

  // An informational answer (1xx but 101) to an HTTP/1.1 client: its header, less the hop-by-hop
  // fields, with this proxy in Via; not counted as the request's answer.
  task<step> relay_interim(http::response<http::buffer_body>& interim) {
    rewrite_interim(interim, s_.pseudonym);
    std::ostringstream out;
    out << interim.base();
    co_return co_await send(client_, out.str(), toxics_.downstream, toxic_stream::downstream, 0);
  }

  // Relays the answer whose header `parser` holds: header, then body chunk by chunk.
  task<step> relay_answer(response_relay_parser& parser, unsigned version, bool client_keep_alive,
                          std::optional<faults::slow_body_plan> slow) {
    auto& res = parser.get();
    const bool upstream_keep_alive = res.keep_alive();
    const bool until_eof = !parser.is_done() && !parser.chunked() && !parser.content_length();
    const bool keep_alive = rewrite_answer(res, parser, version, client_keep_alive, s_.pseudonym);
    const int status = res.result_int();
    const double slow_rate = slow ? slow->bytes_per_s : 0;

    // The header as it is now, before the body's trailers (dropped) join the parsed message.
    http::response<http::buffer_body> outgoing{res.base()};
    http::response_serializer<http::buffer_body> out{outgoing};
    outgoing.body().data = nullptr;
    outgoing.body().more = !parser.is_done();
    step sent = co_await write_ready(client_, out, toxics_.downstream, toxic_stream::downstream, 0);
    if (sent == step::ok) s_.metrics.answered(status);  // not when a toxic held or closed it
    while (sent == step::ok && !parser.is_done()) {
      auto [ec, n] =
          co_await read_body_piece(upstream_, upstream_buffer_, parser, o_.upstream_timeout);
      entry_.no_deadline();
      if (ec == http::error::need_buffer) ec = {};  // chunk_ is full: no error
      if (stopped()) co_return step::gone;
      if (ec) {
        // Too late for a 502: the client's answer has begun. It sees its connection close.
        s_.metrics.upstream_failed(entry_.timed_out     ? upstream_error::timeout
                                   : is_parse_error(ec) ? upstream_error::bad_response
                                                        : upstream_error::reset);
        close_upstream();
        co_return step::failed;
      }
      outgoing.body().size = chunk_.size() - res.body().size;
      outgoing.body().data = chunk_.data();
      outgoing.body().more = !parser.is_done();
      sent = co_await write_ready(client_, out, toxics_.downstream, toxic_stream::downstream,
                                  slow_rate);
    }
    if (sent == step::ok && !out.is_done()) {
      outgoing.body().data = nullptr;
      outgoing.body().size = 0;
      outgoing.body().more = false;
      sent = co_await write_ready(client_, out, toxics_.downstream, toxic_stream::downstream, 0);
    }
    if (!upstream_keep_alive || until_eof || !parser.is_done()) close_upstream();
    if (sent != step::ok) co_return sent;
    co_return keep_alive ? step::ok : step::closed;
  }

  // Writes what the serializer has ready through the stream's toxics, until it needs the next
  // chunk or is done. Beast's serializer holds a header back until the body's first chunk is
  // there (or the body is known to be empty), so they leave in one write.
  template <bool isRequest>
  task<step> write_ready(socket_type& to, http::serializer<isRequest, http::buffer_body>& out,
                         toxic_pipe& pipe, toxic_stream stream, double extra_bytes_per_s) {
    for (;;) {
      beast::error_code ec;
      staging_.clear();
      out.next(ec, [this](beast::error_code&, const auto& buffers) {
        for (const auto b : beast::buffers_range_ref(buffers)) {
          staging_.append(static_cast<const char*>(b.data()), b.size());
        }
      });
      if (ec == http::error::need_buffer) co_return step::ok;
      if (ec) co_return step::failed;
      const step sent = co_await send(to, staging_, pipe, stream, extra_bytes_per_s);
      if (sent != step::ok) co_return sent;
      out.consume(staging_.size());
      if (out.is_done()) co_return step::ok;
    }
  }

  // Sends `bytes` as the stream's toxics plan them: in pieces, after waits; a timeout toxic holds
  // them instead, and limit_data closes the connection once reached.
  task<step> send(socket_type& to, std::string_view bytes, toxic_pipe& pipe, toxic_stream stream,
                  double extra_bytes_per_s) {
    const duration timeout =
        stream == toxic_stream::upstream ? o_.upstream_timeout : o_.header_timeout;
    if (const auto hold = pipe.timeout()) co_return co_await hold_stream(*hold);
    if (pipe.empty() && extra_bytes_per_s == 0) {
      entry_.expect_within(timeout);
      const auto [ec, n] = co_await asio::async_write(to, asio::buffer(bytes), on_loop);
      entry_.no_deadline();
      if (stopped()) co_return step::gone;
      if (ec) co_return entry_.timed_out ? step::timeout : step::failed;
      s_.metrics.relayed(stream, n);
      co_return step::ok;
    }
    const chunk_plan plan = pipe.plan(bytes.size(), rng_, extra_bytes_per_s);
    std::size_t offset = 0;
    for (const piece& p : plan.pieces) {
      if (p.wait.count() > 0 && !co_await sleep_until(saturating_add(steady::now(), p.wait))) {
        co_return step::gone;
      }
      entry_.expect_within(timeout);
      const auto [ec, n] =
          co_await asio::async_write(to, asio::buffer(bytes.substr(offset, p.bytes)), on_loop);
      entry_.no_deadline();
      if (stopped()) co_return step::gone;
      if (ec) co_return entry_.timed_out ? step::timeout : step::failed;
      s_.metrics.relayed(stream, n);
      offset += n;
    }
    if (plan.close_after) co_return step::closed;
    co_return step::ok;
  }

  // Toxiproxy's timeout toxic: no data passes; the connection closes `timeout` after it opened
  // (0: when the client leaves). What the client sends meanwhile is read and dropped.
  task<step> hold_stream(duration timeout) {
    if (timeout.count() > 0) {
      entry_.expect_by(saturating_add(opened_, timeout));
    } else {
      entry_.no_deadline();
    }
    std::array<char, 4096> sink;
    for (;;) {
      const auto [ec, n] = co_await client_.async_read_some(asio::buffer(sink), on_loop);
      if (ec) break;
    }
    entry_.no_deadline();
    co_return stopped() ? step::gone : step::closed;
  }

  // Waits until `until`, on purpose (no deadline); false when the proxy stops or a reset_peer
  // fires meanwhile.
  task<bool> sleep_until(steady::time_point until) {
    if (stopped()) co_return false;
    entry_.no_deadline();
    waiter_.expires_at(until);
    co_await waiter_.async_wait(on_loop);
    co_return !stopped();
  }

  // A fault's hold (a latency, a hang): as serve waits, in slices of at most 100 ms so that a
  // client that left ends it. False when it ended that way, or the proxy stops.
  task<bool> wait_for_fault(steady::time_point until) {
    for (;;) {
      if (stopped()) co_return false;
      const auto now = steady::now();
      if (now >= until) co_return true;
      const auto slice = std::chrono::milliseconds(100);
      if (!co_await sleep_until(until - now > slice ? now + slice : until)) co_return false;
      if (peer_closed(client_)) co_return false;
    }
  }

  // Opens the upstream connection: ok, failed (refused, unreachable), timeout, or gone.
  task<step> connect_upstream() {
    upstream_buffer_.clear();
    entry_.expect_within(o_.upstream_timeout);
    const auto [ec, endpoint] = co_await asio::async_connect(upstream_, s_.upstream, on_loop);
    entry_.no_deadline();
    if (stopped()) co_return step::gone;
    if (ec) {
      const bool timed_out = entry_.timed_out;
      close_upstream();
      co_return timed_out ? step::timeout : step::failed;
    }
    beast::error_code ignored;
    upstream_.set_option(tcp::no_delay(true), ignored);
    co_return step::ok;
  }

  void close_upstream() {
    close_connection(upstream_);
    upstream_buffer_.clear();
  }

  // Reads and drops the rest of a request's body (one the proxy answers itself): ok; failed when
  // it could not (the client left, too slow), and the connection must then close after the
  // answer; closed when the body did not parse, answered 400 and closed here.
  task<step> discard_body(request_relay_parser& parser) {
    while (!parser.is_done()) {
      auto [ec, n] = co_await read_body_piece(client_, client_buffer_, parser, o_.header_timeout);
      entry_.no_deadline();
      if (ec == http::error::need_buffer) ec = {};  // chunk_ is full: no error
      if (!stopped() && is_parse_error(ec)) {
        co_await answer_and_close(http::status::bad_request, "bad request: " + ec.message() + "\n");
        co_return step::closed;
      }
      if (ec || stopped()) co_return step::failed;
    }
    co_return step::ok;
  }

  // The proxy's own answer for an upstream failure, counted by kind: 504 for a timeout, else 502;
  // through the client's toxics like any answer.
  task<step> upstream_failure(upstream_error kind, std::string_view body, unsigned version,
                              bool keep_alive) {
    s_.metrics.upstream_failed(kind);
    auto res = make_response(
        kind == upstream_error::timeout ? http::status::gateway_timeout : http::status::bad_gateway,
        std::string(body), version, keep_alive);
    co_return co_await answer(res, true);
  }

  // Writes one of the proxy's own answers (counted); ok when the connection goes on.
  task<step> answer(http::response<http::string_body>& res, bool through_toxics) {
    s_.metrics.answered(res.result_int());
    res.set(http::field::date, http_date_now());
    const std::string text = serialize(res);
    toxic_pipe none;
    const step sent = co_await send(client_, text, through_toxics ? toxics_.downstream : none,
                                    toxic_stream::downstream, 0);
    if (sent != step::ok) co_return sent;
    if (res.keep_alive()) co_return step::ok;
    co_await close_gently(client_);  // a request body may be left unread
    co_return step::closed;
  }

  // 400, 408 or 501, then the connection closes.
  task<> answer_and_close(http::status status, std::string body) {
    auto res = make_response(status, std::move(body), 11, false);
    res.set(http::field::date, http_date_now());
    s_.metrics.answered(res.result_int());
    const std::string text = serialize(res);
    entry_.expect_within(o_.header_timeout);
    const auto [ec, n] = co_await asio::async_write(client_, asio::buffer(text), on_loop);
    entry_.no_deadline();  // close_gently has its own limit
    if (ec || stopped()) co_return;
    co_await close_gently(client_);
  }

  shared_state& s_;
  const proxy_options& o_;
  socket_type& client_;
  socket_type upstream_;
  timer_type waiter_;
  connection_entry& entry_;
  random_generator rng_;
  connection_toxics toxics_;
  const steady::time_point opened_ = steady::now();
  beast::flat_buffer client_buffer_;
  beast::flat_buffer upstream_buffer_;
  std::vector<char> chunk_;
  std::string staging_;
};

}  // namespace
}  // namespace proxy_detail

namespace {

// The options with their defaults filled in: max_connections 0 is half of what serve would take
// (each client connection holds two descriptors).
proxy_options with_defaults(proxy_options o) {
  if (o.max_connections <= 0) {
    o.max_connections = std::max<std::int64_t>(1, default_max_connections(1) / 2);
  }
  return o;
}

}  // namespace

struct proxy::impl final : connection_owner {
  explicit impl(const proxy_options& o)
      : options(with_defaults(o)), shared{options, metrics, {}, {}} {}

  proxy_options options;
  proxy_metrics metrics;
  proxy_detail::shared_state shared;
  asio::io_context context{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  acceptor_type acceptor{context.get_executor()};
  // A deadline ends the wait it was set for: an upstream too slow gets the client a 504, and the
  // client's connection goes on.
  connection_table connections{context.get_executor(), {.deadline_closes = false}, *this};
  listener accept{acceptor, connections, *this, metrics.connections, options.max_connections};
  std::thread thread;
  std::uint16_t port = 0;
  std::mutex control;
  bool stopped = false;
  std::uint64_t sessions = 0;  // numbers each connection's draws (derive_seed)

  task<> session(socket_type& client, connection_entry& entry) override {
    proxy_detail::connection c(shared, client, entry, sessions++);
    co_await c.run();
  }
  void accepted() noexcept override { metrics.connections_total.fetch_add(1); }
  void refused() noexcept override { metrics.connections_refused.fetch_add(1); }
  void closed(const connection_entry&, connection_entry::ending why) noexcept override {
    if (why == connection_entry::ending::evicted) metrics.connections_evicted.fetch_add(1);
  }

  void shut_down() {
    shared.stopping = true;
    accept.stop();
    connections.stop();
  }
};

proxy::proxy(const proxy_options& options) : impl_(std::make_unique<impl>(options)) {
  const proxy_options& o = impl_->options;
  beast::error_code ec;
  const auto address = asio::ip::make_address(o.listen_host, ec);
  if (ec) throw std::system_error(ec, "bad listen address '" + o.listen_host + "'");
  listen_on(impl_->acceptor, tcp::endpoint(address, o.listen_port), false);
  impl_->port = impl_->acceptor.local_endpoint(ec).port();
  if (ec) throw std::system_error(ec, "cannot read the listening address");

  tcp::resolver resolver(impl_->context);
  const auto results = resolver.resolve(o.upstream_host, std::to_string(o.upstream_port), ec);
  if (ec || results.empty()) {
    throw std::system_error(
        ec ? ec : make_error_code(asio::error::host_not_found),
        "cannot resolve the upstream " + authority(o.upstream_host, o.upstream_port));
  }
  for (const auto& r : results) impl_->shared.upstream.push_back(r.endpoint());
  std::random_device entropy;
  const std::uint64_t token = (std::uint64_t{entropy()} << 32) ^ entropy();
  impl_->shared.pseudonym = fmt::format("backoff-{:016x}", token);
}

proxy::~proxy() {
  stop();
  wait();
}

std::uint16_t proxy::port() const noexcept {
  return impl_->port;
}

const proxy_metrics& proxy::metrics() const noexcept {
  return impl_->metrics;
}

void proxy::start() {
  impl_->shared.started = steady::now();
  duration shortest = std::min({impl_->options.header_timeout, impl_->options.idle_timeout,
                                impl_->options.upstream_timeout});
  for (const toxic& t : impl_->options.toxics) {
    if ((t.kind == toxic_kind::timeout || t.kind == toxic_kind::reset_peer) &&
        t.timeout.count() > 0) {
      shortest = std::min(shortest, t.timeout);
    }
  }
  asio::co_spawn(impl_->context, impl_->accept.run(), asio::detached);
  asio::co_spawn(impl_->context, impl_->connections.sweep(sweep_period(shortest)), asio::detached);
  impl_->thread = std::thread([ctx = &impl_->context] { ctx->run(); });
}

void proxy::stop() {
  const std::lock_guard lock(impl_->control);
  if (impl_->stopped) return;
  impl_->stopped = true;
  asio::post(impl_->context, [i = impl_.get()] { i->shut_down(); });
}

void proxy::wait() {
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace backoff::net
