// SPDX-License-Identifier: Apache-2.0
#include "proxy.hpp"

#include <fmt/format.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <list>
#include <mutex>
#include <random>
#include <sstream>
#include <system_error>
#include <thread>

#include "backoff/duration.hpp"
#include "backoff/http.hpp"
#include "backoff/policy.hpp"
#include "backoff/spec.hpp"
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

// As in the server: everything runs on one io_context, so sockets and timers name its executor.
using executor = asio::io_context::executor_type;
template <typename T = void>
using task = asio::awaitable<T, executor>;
using socket_type = asio::basic_stream_socket<tcp, executor>;
using acceptor_type = asio::basic_socket_acceptor<tcp, executor>;
using timer_type = asio::basic_waitable_timer<steady, asio::wait_traits<steady>, executor>;
constexpr auto on_loop = asio::as_tuple(asio::use_awaitable_t<executor>{});

using request_relay_parser = http::request_parser<http::buffer_body>;
// Informational answers relayed before an answer: more is an upstream that never answers (502).
constexpr int max_interim_answers = 32;
using response_relay_parser = http::response_parser<http::buffer_body>;

steady::duration to_steady(duration d) {
  return std::chrono::duration_cast<steady::duration>(d);
}

// True when the peer has closed its side (recv would return 0), or the socket failed.
bool peer_closed(socket_type& socket) {
  char byte;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// True when the peer sent bytes nobody asked for (an upstream talking out of turn).
bool has_unread_bytes(socket_type& socket) {
  char byte;
  return ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

// A reset as the peer sees it (ECONNRESET): SO_LINGER with a zero timeout makes close() send RST.
void reset_socket(socket_type& socket) {
  beast::error_code ignored;
  socket.set_option(asio::socket_base::linger(true, 0), ignored);
  socket.close(ignored);
}

void close_socket(socket_type& socket) {
  beast::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

// Errors of the HTTP parser (the message does not parse), as opposed to the connection's.
bool is_parse_error(const beast::error_code& ec) {
  return ec.category() == make_error_code(http::error::end_of_stream).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message &&
         ec != http::error::need_buffer;
}

// "host:port", an IPv6 address in brackets: the Host header --rewrite-host sends.
std::string authority(std::string_view host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  return fmt::format("{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

// Fields that a Connection header may name but that are never hop-by-hop: the message's framing
// (the proxy frames what it forwards itself, from what its parser read: frame_request and
// frame_response) and the Host the upstream routes on. Dropping a framing field because a client
// named it in Connection forwarded the body raw, and the upstream read it as a second request.
bool never_hop_by_hop(std::string_view name) {
  return beast::iequals(name, "content-length") || beast::iequals(name, "transfer-encoding") ||
         beast::iequals(name, "host");
}

// Hop-by-hop fields (RFC 9110 section 7.6.1): they describe one connection, so a proxy does not
// forward them; the fields named in Connection (every Connection field's list) are hop-by-hop
// too, but for never_hop_by_hop's. Upgrade is dropped as well: the proxy relays HTTP/1.1
// messages, not upgraded protocols.
template <class Fields>
void remove_hop_by_hop(Fields& fields) {
  std::vector<std::string> named;
  const auto connection = fields.equal_range(http::field::connection);
  for (auto it = connection.first; it != connection.second; ++it) {
    for (const auto& token : http::token_list(it->value())) {
      if (!never_hop_by_hop(token)) named.emplace_back(token);
    }
  }
  for (const std::string& name : named) fields.erase(name);
  fields.erase(http::field::connection);
  fields.erase(http::field::keep_alive);
  fields.erase(http::field::proxy_connection);
  fields.erase(http::field::upgrade);
  fields.erase(http::field::te);
  fields.erase(http::field::trailer);
}

// The origin-form of a target: an absolute-form one ("http://host:port/path?q", which a client
// sends when it takes the proxy for a forward proxy, RFC 9112 section 3.2.2) without its scheme
// and authority, as the upstream expects it.
std::string_view origin_form(std::string_view target) {
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (target.size() > scheme.size() && beast::iequals(target.substr(0, scheme.size()), scheme)) {
      const auto slash = target.find('/', scheme.size());
      return slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    }
  }
  return target;
}

// The request's path without its query, for the metrics path and the faults.
std::string_view path_of(std::string_view target) {
  target = origin_form(target);
  return target.substr(0, target.find('?'));
}

std::string serialize(const http::response<http::string_body>& res) {
  std::ostringstream out;
  out << res;
  return out.str();
}

// Every value of the fields named `name`, as one list (RFC 9110 section 5.3).
template <class Fields>
std::string joined_values(const Fields& fields, http::field name) {
  std::string out;
  const auto range = fields.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) {
    if (!out.empty()) out += ", ";
    out += std::string_view(it->value());
  }
  return out;
}

// The request's framing as the proxy's parser read it, and nothing else: Content-Length and
// Transfer-Encoding are set anew (refuse_framing let through only a single "chunked"), so the
// upstream frames the body exactly as the proxy did, whatever the client's fields said.
void frame_request(http::request<http::buffer_body>& req, const request_relay_parser& parser) {
  req.erase(http::field::content_length);
  req.erase(http::field::transfer_encoding);
  if (parser.chunked()) {
    req.set(http::field::transfer_encoding, "chunked");
  } else if (const auto length = parser.content_length()) {
    req.content_length(*length);
  }
}

// The answer's framing as the proxy's parser read it (relay_answer then adapts it to the
// client's version): one Content-Length when it had one (for HEAD and 304 too, where it describes
// the representation), else the transfer codings it decoded, ending in chunked.
void frame_response(http::response<http::buffer_body>& res, const response_relay_parser& parser,
                    const std::string& codings) {
  res.erase(http::field::content_length);
  res.erase(http::field::transfer_encoding);
  if (const auto length = parser.content_length()) {
    res.content_length(*length);
  } else if (parser.chunked()) {
    res.set(http::field::transfer_encoding, codings);
  }
}

// "1.1 backoff-3f9c...": this proxy in a Via list (RFC 9110 section 7.6.3), the protocol it
// received the message with, then a pseudonym unique to the proxy. The pseudonym in a request's
// Via means the request went round to this proxy again: a loop.
std::string via_entry(unsigned version, std::string_view pseudonym) {
  return fmt::format("{}.{} {}", version / 10, version % 10, pseudonym);
}

template <class Fields>
void append_via(Fields& fields, unsigned version, std::string_view pseudonym) {
  std::string via = joined_values(fields, http::field::via);
  if (!via.empty()) via += ", ";
  via += via_entry(version, pseudonym);
  fields.set(http::field::via, via);
}

// This second's HTTP-date: the Date of the proxy's own answers and of relayed ones without one.
std::string http_date_now() {
  return format_http_date(
      std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
}

// What a step of the relay came to.
enum class step {
  ok,
  failed,   // the socket failed or the peer left
  timeout,  // the deadline of the connection's phase passed
  closed,   // a toxic closed the connection (limit_data, timeout)
  gone,     // the proxy stops, or the connection was reset (reset_peer, a reset fault)
};

// What the proxy knows of one client connection, for its timeouts, reset_peer, and stop. The
// session sets a deadline while it waits on a peer and clears it while it waits on purpose (a
// latency, a hang); the proxy's sweep cancels the pending operation once the deadline passed.
struct connection_entry {
  enum class phase {
    idle,     // waiting for a request, no byte of it yet
    reading,  // a request header begun
    busy,     // a request being forwarded or answered
  };
  socket_type* client = nullptr;
  socket_type* upstream = nullptr;
  timer_type* waiter = nullptr;
  steady::time_point deadline = steady::time_point::max();
  steady::time_point reset_at = steady::time_point::max();  // reset_peer
  phase now = phase::idle;
  steady::time_point since = steady::now();  // when `now` began: who waited longest
  bool timed_out = false;                    // the sweep cancelled on the deadline
  bool reset = false;                        // reset_peer fired
  bool evicted = false;                      // closed to make room at max_connections

  void enter(phase p) {
    now = p;
    since = steady::now();
  }
  void expect_within(duration timeout) {
    deadline = saturating_add(steady::now(), timeout);
    timed_out = false;
  }
  void expect_by(steady::time_point t) {
    deadline = t;
    timed_out = false;
  }
  void no_deadline() { deadline = steady::time_point::max(); }
};

}  // namespace
}  // namespace proxy_detail

// --- metrics
// --------------------------------------------------------------------------------------

std::string_view upstream_error_name(upstream_error e) noexcept {
  switch (e) {
    case upstream_error::refused:
      return "refused";
    case upstream_error::timeout:
      return "timeout";
    case upstream_error::bad_response:
      return "bad_response";
    case upstream_error::reset:
      return "reset";
  }
  return "unknown";
}

void proxy_metrics::answered(int status) noexcept {
  if (status >= 100 && status <= 599) {
    statuses_[static_cast<std::size_t>(status - 100)].fetch_add(1, std::memory_order_relaxed);
  }
}
void proxy_metrics::upstream_failed(upstream_error e) noexcept {
  upstream_[static_cast<std::size_t>(e)].fetch_add(1, std::memory_order_relaxed);
}
void proxy_metrics::faults_fired(unsigned fired_bits) noexcept {
  for (unsigned c = 0; c < fault_counter_count; ++c) {
    if ((fired_bits & (1U << c)) != 0) faults_[c].fetch_add(1, std::memory_order_relaxed);
  }
}
void proxy_metrics::toxics_applied(unsigned applied_bits) noexcept {
  for (unsigned k = 0; k < toxic_kind_count; ++k) {
    if ((applied_bits & (1U << k)) != 0) toxics_[k].fetch_add(1, std::memory_order_relaxed);
  }
}
void proxy_metrics::relayed(toxic_stream s, std::uint64_t bytes) noexcept {
  bytes_[static_cast<std::size_t>(s)].fetch_add(bytes, std::memory_order_relaxed);
}
std::uint64_t proxy_metrics::requests(int status) const noexcept {
  return status >= 100 && status <= 599 ? statuses_[static_cast<std::size_t>(status - 100)].load()
                                        : 0;
}
std::uint64_t proxy_metrics::upstream_errors(upstream_error e) const noexcept {
  return upstream_[static_cast<std::size_t>(e)].load();
}
std::uint64_t proxy_metrics::faults(fault_counter c) const noexcept {
  return faults_[c].load();
}
std::uint64_t proxy_metrics::toxics(toxic_kind k) const noexcept {
  return toxics_[static_cast<std::size_t>(k)].load();
}
std::uint64_t proxy_metrics::bytes(toxic_stream s) const noexcept {
  return bytes_[static_cast<std::size_t>(s)].load();
}

std::string prometheus_text(const proxy_metrics& m) {
  std::string out;
  const auto header = [&](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  header("backoff_proxy_requests_total", "counter",
         "Answers the proxy gave its clients (relayed or its own), by HTTP status.");
  for (int status = 100; status <= 599; ++status) {
    if (const std::uint64_t n = m.requests(status); n != 0) {
      out += fmt::format("backoff_proxy_requests_total{{status=\"{}\"}} {}\n", status, n);
    }
  }
  header("backoff_proxy_upstream_errors_total", "counter",
         "Upstream failures: refused (no connection), timeout (no answer in --upstream-timeout), "
         "bad_response (an answer that does not parse), reset (closed or reset mid-exchange).");
  for (unsigned e = 0; e < upstream_error_count; ++e) {
    const auto kind = static_cast<upstream_error>(e);
    out += fmt::format("backoff_proxy_upstream_errors_total{{kind=\"{}\"}} {}\n",
                       upstream_error_name(kind), m.upstream_errors(kind));
  }
  header("backoff_proxy_faults_total", "counter",
         "Requests a fault was injected into, by kind (docs/NETWORK.md, Faults on demand).");
  for (unsigned c = 0; c < fault_counter_count; ++c) {
    const auto counter = static_cast<fault_counter>(c);
    out += fmt::format("backoff_proxy_faults_total{{fault=\"{}\"}} {}\n",
                       fault_counter_name(counter), m.faults(counter));
  }
  header("backoff_proxy_toxics_total", "counter",
         "Client connections a toxic applied to (after its toxicity draw), by kind.");
  for (unsigned k = 0; k < toxic_kind_count; ++k) {
    const auto kind = static_cast<toxic_kind>(k);
    out += fmt::format("backoff_proxy_toxics_total{{toxic=\"{}\"}} {}\n", toxic_kind_name(kind),
                       m.toxics(kind));
  }
  header("backoff_proxy_bytes_total", "counter",
         "Bytes relayed: downstream toward the clients, upstream toward the server.");
  out += fmt::format("backoff_proxy_bytes_total{{stream=\"downstream\"}} {}\n",
                     m.bytes(toxic_stream::downstream));
  out += fmt::format("backoff_proxy_bytes_total{{stream=\"upstream\"}} {}\n",
                     m.bytes(toxic_stream::upstream));
  header("backoff_proxy_connections_total", "counter", "Client connections accepted.");
  out += fmt::format("backoff_proxy_connections_total {}\n", m.connections_total.load());
  header("backoff_proxy_refused_connections_total", "counter",
         "Client connections closed at once: the proxy held its maximum.");
  out += fmt::format("backoff_proxy_refused_connections_total {}\n", m.connections_refused.load());
  header("backoff_proxy_evicted_connections_total", "counter",
         "Client connections closed to make room for a new one at the maximum: the one that had "
         "waited longest for a request (idle, or its header begun and not finished).");
  out += fmt::format("backoff_proxy_evicted_connections_total {}\n", m.connections_evicted.load());
  header("backoff_proxy_connections", "gauge", "Open client connections.");
  out += fmt::format("backoff_proxy_connections {}\n", m.connections.load());
  return out;
}

bool split_host_port(std::string_view text, std::string& host, std::uint16_t& port) {
  std::string_view h, p;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos || text.substr(close + 1, 1) != ":") return false;
    h = text.substr(1, close - 1);
    p = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return false;
    h = text.substr(0, colon);
    p = text.substr(colon + 1);
    if (h.find(':') != std::string_view::npos) return false;  // IPv6 needs its brackets
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (h.empty() || p.empty() || ec != std::errc{} || end != p.data() + p.size() || value > 65535) {
    return false;
  }
  host = std::string(h);
  port = static_cast<std::uint16_t>(value);
  return true;
}

// --- the proxy
// ------------------------------------------------------------------------------------

namespace proxy_detail {
namespace {

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
    entry_.client = &client_;
    entry_.upstream = &upstream_;
    entry_.waiter = &waiter_;
  }
  ~connection() {
    close_socket(upstream_);
    entry_.upstream = nullptr;
    entry_.waiter = nullptr;
  }

  task<> run() {
    toxics_ = draw_toxics(o_.toxics, rng_);
    s_.metrics.toxics_applied(toxics_.applied);
    if (toxics_.reset_after) {
      if (toxics_.reset_after->count() == 0) {
        reset_socket(client_);
        co_return;
      }
      entry_.reset_at = saturating_add(opened_, *toxics_.reset_after);
    }
    bool first = true;
    for (;;) {
      const step served = co_await serve_one(first);
      first = false;
      if (served != step::ok) break;
    }
  }

 private:
  bool stopped() const { return s_.stopping || entry_.reset || entry_.evicted; }

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

    std::optional<slow_body_plan> slow;
    if (!o_.faults.empty()) {
      const request_view view{path, [&req](std::string_view name) {
                                const auto it = req.find(name);
                                return it == req.end() ? std::string_view{}
                                                       : std::string_view(it->value());
                              }};
      const fault_decision d = decide(
          o_.faults, std::chrono::duration_cast<duration>(steady::now() - s_.started), view, rng_);
      if (d.any()) s_.metrics.faults_fired(d.fired);
      if (d.reset) {
        reset_socket(client_);
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
  task<step> forward(request_relay_parser& parser, std::optional<slow_body_plan> slow) {
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
    remove_hop_by_hop(req);
    frame_request(req, parser);
    append_via(req, version, s_.pseudonym);
    if (const std::string_view target = req.target(); origin_form(target) != target) {
      req.target(std::string(origin_form(target)));
    }
    req.version(11);
    req.keep_alive(true);
    // The Host the client sent goes on unchanged (the upstream may route on it), unless
    // --rewrite-host asks for the upstream's own; an HTTP/1.0 request without one gets it, since
    // it leaves as HTTP/1.1 (RFC 9112 section 3.2).
    if (o_.rewrite_host || req.find(http::field::host) == req.end()) {
      req.set(http::field::host, authority(o_.upstream_host, o_.upstream_port));
    }
    // What goes upstream is this header, fixed now: Beast's parser adds a chunked body's trailer
    // fields to the message it parses into, and the serializer sends the header only with the
    // body's first bytes, by when a short body's trailers ("Host: elsewhere") are in. Trailers
    // are dropped (RFC 9110 section 6.5.1: never merged into the header).
    http::request<http::buffer_body> outgoing{req.base()};

    for (int attempt = 0;; ++attempt) {
      bool fresh = false;
      if (upstream_.is_open() &&
          (upstream_buffer_.size() > 0 || peer_closed(upstream_) || has_unread_bytes(upstream_))) {
        close_upstream();  // closed while idle, or talking out of turn: not reusable
      }
      if (!upstream_.is_open()) {
        const step connected = co_await connect_upstream();
        if (connected != step::ok) {
          if (connected == step::gone) co_return connected;
          const bool refused = connected == step::failed;
          s_.metrics.upstream_failed(refused ? upstream_error::refused : upstream_error::timeout);
          co_return co_await proxy_error(
              refused ? http::status::bad_gateway : http::status::gateway_timeout,
              refused ? "upstream refused the connection\n" : "upstream connect timeout\n", version,
              client_keep_alive && !has_body);
        }
        fresh = true;
      }

      // The request: its header, then its body as it comes, chunk by chunk.
      http::request_serializer<http::buffer_body> out{outgoing};
      outgoing.body().data = nullptr;
      outgoing.body().more = has_body;
      step sent = co_await write_ready(upstream_, out, toxics_.upstream, toxic_stream::upstream, 0);
      if (sent == step::ok && expects_continue && has_body) {
        static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
        entry_.expect_within(o_.header_timeout);
        const auto [ec, n] = co_await asio::async_write(client_, asio::buffer(go_on), on_loop);
        entry_.no_deadline();
        if (ec || stopped()) co_return step::failed;
      }
      while (sent == step::ok && !parser.is_done()) {
        req.body().data = chunk_.data();
        req.body().size = chunk_.size();
        entry_.expect_within(o_.header_timeout);
        auto [ec, n] = co_await http::async_read(client_, client_buffer_, parser, on_loop);
        entry_.no_deadline();
        if (ec == http::error::need_buffer) ec = {};
        if (stopped()) co_return step::gone;
        if (is_parse_error(ec)) {
          // A bad chunk size or extension: the upstream has part of a request it must not
          // answer, and the client gets a 400 rather than a silent close.
          close_upstream();
          co_await answer_and_close(http::status::bad_request,
                                    "bad request: " + ec.message() + "\n");
          co_return step::closed;
        }
        if (ec) co_return step::failed;  // the client left
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
      if (sent != step::ok) {
        if (sent == step::gone || sent == step::closed) co_return sent;
        close_upstream();
        if (sent == step::failed && !fresh && !has_body && attempt == 0) continue;  // went stale
        s_.metrics.upstream_failed(sent == step::timeout ? upstream_error::timeout
                                                         : upstream_error::reset);
        co_return co_await proxy_error(
            sent == step::timeout ? http::status::gateway_timeout : http::status::bad_gateway,
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
        const upstream_error kind = timed_out ? upstream_error::timeout
                                    : is_parse_error(header_error) ||
                                            header_error == http::error::buffer_overflow ||
                                            header_error == http::error::header_limit
                                        ? upstream_error::bad_response
                                        : upstream_error::reset;
        s_.metrics.upstream_failed(kind);
        co_return co_await proxy_error(
            kind == upstream_error::timeout ? http::status::gateway_timeout
                                            : http::status::bad_gateway,
            kind == upstream_error::timeout        ? "upstream timeout\n"
            : kind == upstream_error::bad_response ? "bad response from upstream\n"
                                                   : "upstream closed the connection\n",
            version, client_keep_alive);
      }
      co_return co_await relay_answer(*answer_parser, version, client_keep_alive, slow);
    }
  }

  // An informational answer (1xx but 101) to an HTTP/1.1 client: its header, less the hop-by-hop
  // fields, with this proxy in Via; not counted as the request's answer.
  task<step> relay_interim(http::response<http::buffer_body>& interim) {
    const unsigned received = interim.version();
    remove_hop_by_hop(interim);
    interim.erase(http::field::content_length);
    interim.erase(http::field::transfer_encoding);
    append_via(interim, received, s_.pseudonym);
    interim.version(11);
    std::ostringstream out;
    out << interim.base();
    co_return co_await send(client_, out.str(), toxics_.downstream, toxic_stream::downstream, 0);
  }

  // Relays the answer whose header `parser` holds: header, then body chunk by chunk.
  task<step> relay_answer(response_relay_parser& parser, unsigned version, bool client_keep_alive,
                          std::optional<slow_body_plan> slow) {
    auto& res = parser.get();
    const bool upstream_keep_alive = res.keep_alive();
    const bool until_eof = !parser.is_done() && !parser.chunked() && !parser.content_length();
    bool keep_alive = client_keep_alive;
    const std::string codings = joined_values(res, http::field::transfer_encoding);
    const unsigned received = res.version();
    remove_hop_by_hop(res);
    frame_response(res, parser, codings);
    append_via(res, received, s_.pseudonym);
    // RFC 9110 section 6.6.1: a recipient with a clock forwarding an answer without Date adds one.
    if (res.find(http::field::date) == res.end()) res.set(http::field::date, http_date_now());
    res.version(version);
    if (until_eof) {
      // A body that ends with the upstream connection: an HTTP/1.1 client gets it chunked and
      // keeps its connection; an HTTP/1.0 one gets it up to the close, as the upstream sent it.
      if (version == 11) {
        res.chunked(true);
      } else {
        keep_alive = false;
      }
    } else if (parser.chunked() && version != 11) {
      res.chunked(false);  // HTTP/1.0 has no chunks: the body ends with the connection
      keep_alive = false;
    }
    res.keep_alive(keep_alive);
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
      res.body().data = chunk_.data();
      res.body().size = chunk_.size();
      entry_.expect_within(o_.upstream_timeout);
      auto [ec, n] = co_await http::async_read(upstream_, upstream_buffer_, parser, on_loop);
      entry_.no_deadline();
      if (ec == http::error::need_buffer) ec = {};
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
    close_socket(upstream_);
    upstream_buffer_.clear();
  }

  // Reads and drops the rest of a request's body (one the proxy answers itself): ok; failed when
  // it could not (the client left, too slow), and the connection must then close after the
  // answer; closed when the body did not parse, answered 400 and closed here.
  task<step> discard_body(request_relay_parser& parser) {
    auto& req = parser.get();
    while (!parser.is_done()) {
      req.body().data = chunk_.data();
      req.body().size = chunk_.size();
      entry_.expect_within(o_.header_timeout);
      auto [ec, n] = co_await http::async_read(client_, client_buffer_, parser, on_loop);
      entry_.no_deadline();
      if (ec == http::error::need_buffer) ec = {};
      if (!stopped() && is_parse_error(ec)) {
        co_await answer_and_close(http::status::bad_request, "bad request: " + ec.message() + "\n");
        co_return step::closed;
      }
      if (ec || stopped()) co_return step::failed;
    }
    co_return step::ok;
  }

  // The proxy's own answer for an upstream failure, through the client's toxics like any answer.
  task<step> proxy_error(http::status status, std::string body, unsigned version, bool keep_alive) {
    auto res = make_response(status, std::move(body), version, keep_alive);
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
    co_await close_gently();  // a request body may be left unread
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
    if (ec || stopped()) co_return;
    co_await close_gently();
  }

  // Before closing a connection with request bytes still unread (a header over the limit, a body
  // the proxy did not relay): closing at once would reset it, and the client's TCP would drop the
  // answer before the client reads it. So the proxy stops sending and drains what the client
  // still sends for at most a second or 1 MiB, as serve does (nginx's lingering close).
  task<> close_gently() {
    beast::error_code ignored;
    client_.shutdown(tcp::socket::shutdown_send, ignored);
    entry_.expect_within(std::chrono::seconds(1));
    std::array<char, 4096> sink;
    std::size_t drained = 0;
    while (drained < (1U << 20)) {
      const auto [read_error, got] = co_await client_.async_read_some(asio::buffer(sink), on_loop);
      if (read_error) break;
      drained += got;
    }
    entry_.no_deadline();
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

struct proxy::impl {
  template <typename T = void>
  using task = proxy_detail::task<T>;
  using socket_type = proxy_detail::socket_type;
  using acceptor_type = proxy_detail::acceptor_type;
  using timer_type = proxy_detail::timer_type;
  using connection_entry = proxy_detail::connection_entry;
  using shared_state = proxy_detail::shared_state;
  using connection = proxy_detail::connection;

  explicit impl(const proxy_options& o) : options(o), shared{options, metrics, {}, {}} {}

  proxy_options options;
  proxy_metrics metrics;
  shared_state shared;
  asio::io_context context{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  acceptor_type acceptor{context.get_executor()};
  timer_type sweeper{context.get_executor()};
  std::list<connection_entry> entries;
  std::thread thread;
  std::uint16_t port = 0;
  std::mutex control;
  bool stopped = false;
  std::uint64_t accepted = 0;

  // One connection's session: the connection layer in this frame, its entry in the list.
  task<> session(socket_type client, std::uint64_t number) {
    const auto me = entries.emplace(entries.end());
    metrics.connections.fetch_add(1);
    {
      connection c(shared, client, *me, number);
      co_await c.run();
    }
    proxy_detail::close_socket(client);
    entries.erase(me);
    metrics.connections.fetch_sub(1);
  }

  task<> accept_loop() {
    // Accept errors (out of descriptors) back off with the library's own policy, as the server's.
    const backoff_policy policy = parse_policy("exponential(initial=1ms, factor=2, max=1s)");
    backoff_state waits = policy.start();
    random_generator rng(1);
    timer_type pause(context.get_executor());
    for (;;) {
      auto [error, socket] = co_await acceptor.async_accept(proxy_detail::on_loop);
      if (shared.stopping || error == asio::error::operation_aborted) break;
      if (error) {
        // Out of descriptors: make room as at max_connections, then accept again after the pause.
        if (error == asio::error::no_descriptors || error.value() == ENFILE) {
          evict_a_waiting_connection();
        }
        pause.expires_after(proxy_detail::to_steady(waits.next_delay(rng)));
        co_await pause.async_wait(proxy_detail::on_loop);
        continue;
      }
      waits = policy.start();
      metrics.connections_total.fetch_add(1);
      if (metrics.connections.load() >= options.max_connections && !evict_a_waiting_connection()) {
        metrics.connections_refused.fetch_add(1);
        beast::error_code ignored;
        socket.close(ignored);  // memory and descriptors stay bounded; the client retries
        continue;
      }
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      asio::co_spawn(context, session(std::move(socket), accepted++), asio::detached);
    }
  }

  // At max_connections (or out of descriptors): closes the client connection that has waited
  // longest on its client for a request, idle or with a header begun and not finished, as serve
  // does (server.cpp, evict_a_waiting_connection): one byte on each of max_connections
  // connections must not hold the proxy for the header timeout. False when every connection is
  // forwarding or answering a request.
  bool evict_a_waiting_connection() {
    connection_entry* oldest = nullptr;
    for (connection_entry& e : entries) {
      const bool waiting = e.now != connection_entry::phase::busy;
      if (waiting && !e.evicted && !e.reset && (oldest == nullptr || e.since < oldest->since)) {
        oldest = &e;
      }
    }
    if (oldest == nullptr) return false;
    oldest->evicted = true;
    metrics.connections_evicted.fetch_add(1);
    beast::error_code ignored;
    oldest->client->cancel(ignored);
    if (oldest->upstream != nullptr) oldest->upstream->cancel(ignored);
    if (oldest->waiter != nullptr) oldest->waiter->cancel();
    return true;
  }

  // Every `period`: connections past their deadline have their pending operation cancelled;
  // those whose reset_peer time came are reset.
  task<> sweep(duration period) {
    for (;;) {
      sweeper.expires_after(proxy_detail::to_steady(period));
      const auto [ec] = co_await sweeper.async_wait(proxy_detail::on_loop);
      if (ec || shared.stopping) co_return;
      const auto now = steady::now();
      for (connection_entry& e : entries) {
        if (!e.reset && e.reset_at <= now) {
          e.reset = true;
          proxy_detail::reset_socket(*e.client);
          if (e.upstream != nullptr) proxy_detail::close_socket(*e.upstream);
          if (e.waiter != nullptr) e.waiter->cancel();
        } else if (e.deadline <= now) {
          e.timed_out = true;
          e.deadline = steady::time_point::max();
          beast::error_code ignored;
          e.client->cancel(ignored);
          if (e.upstream != nullptr) e.upstream->cancel(ignored);
          if (e.waiter != nullptr) e.waiter->cancel();
        }
      }
    }
  }

  void shut_down() {
    shared.stopping = true;
    beast::error_code ignored;
    acceptor.close(ignored);
    sweeper.cancel();
    for (connection_entry& e : entries) {
      e.client->close(ignored);
      if (e.upstream != nullptr) e.upstream->close(ignored);
      if (e.waiter != nullptr) e.waiter->cancel();
    }
  }
};

proxy::proxy(const proxy_options& options) : impl_(std::make_unique<impl>(options)) {
  proxy_options& o = impl_->options;
  if (o.max_connections <= 0)
    o.max_connections = std::max<std::int64_t>(1, default_max_connections(1) / 2);
  beast::error_code ec;
  const auto address = asio::ip::make_address(o.listen_host, ec);
  if (ec) throw std::system_error(ec, "bad listen address '" + o.listen_host + "'");
  const tcp::endpoint endpoint(address, o.listen_port);
  const std::string where = proxy_detail::authority(o.listen_host, o.listen_port);
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::system_error(ec, "cannot listen on " + where);
  impl_->port = acceptor.local_endpoint(ec).port();
  if (ec) throw std::system_error(ec, "cannot read the listening address");

  tcp::resolver resolver(impl_->context);
  const auto results = resolver.resolve(o.upstream_host, std::to_string(o.upstream_port), ec);
  if (ec || results.empty()) {
    throw std::system_error(
        ec ? ec : make_error_code(asio::error::host_not_found),
        "cannot resolve the upstream " + proxy_detail::authority(o.upstream_host, o.upstream_port));
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
  // Deadlines are checked every eighth of the shortest timeout (at least 5 ms, at most 1 s).
  duration shortest = std::min({impl_->options.header_timeout, impl_->options.idle_timeout,
                                impl_->options.upstream_timeout});
  for (const toxic& t : impl_->options.toxics) {
    if ((t.kind == toxic_kind::timeout || t.kind == toxic_kind::reset_peer) &&
        t.timeout.count() > 0) {
      shortest = std::min(shortest, t.timeout);
    }
  }
  const duration period =
      std::clamp<duration>(shortest / 8, std::chrono::milliseconds(5), std::chrono::seconds(1));
  asio::co_spawn(impl_->context, impl_->accept_loop(), asio::detached);
  asio::co_spawn(impl_->context, impl_->sweep(period), asio::detached);
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
