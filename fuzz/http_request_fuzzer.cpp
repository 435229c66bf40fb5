// SPDX-License-Identifier: Apache-2.0
// Fuzzes the request side of `backoff serve` without sockets: the bytes a client sends on one
// connection go through the server's own read step (src/net/server/handler.cpp: a flat_buffer of
// request_header_limit bytes, a Beast request_parser set up by limit_request_parser, then
// parse_buffered and parse_eof, as read_request in server.cpp calls them), and each request
// through refuse_framing, route_request and make_response, answered as the connection loop
// answers it. The first
// input byte picks the size of each read (1 to 256 bytes, or all the buffer takes); the rest is
// the connection's bytes, pipelined requests included.
// Asserts: nothing throws; every answer (including the 400 for a request that does not parse)
// has a valid status, its Connection as the request asked, and serializes to bytes that parse
// back as the same status and body; routes are consistent (a 405 names what is allowed, a 400
// explains itself in one line, a pause lasts >= 0); and the outcome (the requests routed, in
// order, and how the connection ended) does not depend on how the bytes were split into reads.
#include <algorithm>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "net/server/handler.hpp"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = backoff::net;
using backoff::fuzz::check;

// What happened on the connection, to compare two ways of splitting its bytes.
struct outcome {
  std::vector<std::string> routed;  // "METHOD TARGET -> STATUS" per request answered
  std::string end;                  // how the connection ended
  bool operator==(const outcome&) const = default;
};

// Serializes `res`, parses it back as a client would, and checks that it survived.
void check_response(const net::response& res, bool keep_alive) {
  const unsigned status = res.result_int();
  check(status >= 100 && status <= 599, "a response status outside 100-599");
  check(res.keep_alive() == keep_alive, "a response's Connection differs from the request's");
  std::ostringstream out;
  out << res;
  const std::string bytes = out.str();
  http::response_parser<http::string_body> parser;
  parser.eager(true);
  beast::error_code ec;
  parser.put(boost::asio::buffer(bytes), ec);
  if (!parser.is_done() && !ec) parser.put_eof(ec);
  check(!ec && parser.is_done(), "a response does not parse back", bytes);
  check(parser.get().result_int() == status, "a response's status changes on the wire", bytes);
  check(parser.get().body() == res.body(), "a response's body changes on the wire", bytes);
}

// The answer the connection loop builds for a route (the /metrics body stands in for the real one).
net::response answer(const net::route& r, unsigned version, bool keep_alive) {
  switch (r.kind) {
    case net::route_kind::api:
      return net::make_response(http::status::ok, "OK", version, keep_alive);
    case net::route_kind::metrics:
      return net::make_response(http::status::ok, "backoff_requests_total 1\n", version,
                                keep_alive);
    case net::route_kind::pause:
      check(!r.pause_for || r.pause_for->count() >= 0, "a negative pause");
      return net::make_response(
          http::status::ok,
          r.pause_for ? "paused for " + backoff::format_duration(*r.pause_for) + "\n" : "paused\n",
          version, keep_alive);
    case net::route_kind::resume:
      return net::make_response(http::status::ok, "resumed\n", version, keep_alive);
    case net::route_kind::not_found:
      return net::make_response(http::status::not_found, "not found\n", version, keep_alive);
    case net::route_kind::method_not_allowed: {
      check(!r.allow.empty(), "a 405 without an Allow header");
      auto res = net::make_response(http::status::method_not_allowed, "method not allowed\n",
                                    version, keep_alive);
      res.set(http::field::allow, r.allow);
      return res;
    }
    case net::route_kind::bad_request: {
      // The three 400s a request that parses can get, each with its documented start.
      const std::string_view error = r.error;
      const std::string_view prefix =
          error.starts_with("unknown parameter '") ? "unknown parameter '"
          : error.starts_with("an HTTP/1.1")       ? "an HTTP/1.1 request needs a Host header"
                                                   : "bad ?for= duration: ";
      backoff::fuzz::check_message(error, prefix);
      return net::make_response(http::status::bad_request, r.error + "\n", version, keep_alive);
    }
    case net::route_kind::forbidden:
      // /admin/* from a foreign Host or Origin (the fuzzer's requests reach a loopback server).
      check(!r.error.empty() && r.error.find('\n') == std::string::npos,
            "a 403 without a one-line reason");
      return net::make_response(http::status::forbidden, r.error + "\n", version, keep_alive);
    case net::route_kind::unauthorized: {
      check(!r.error.empty() && r.error.find('\n') == std::string::npos,
            "a 401 without a one-line reason");
      auto res =
          net::make_response(http::status::unauthorized, r.error + "\n", version, keep_alive);
      res.set(http::field::www_authenticate, "Bearer");
      return res;
    }
  }
  backoff::fuzz::fail("a route of no known kind");
}

outcome serve(std::string_view bytes, std::size_t read_size) {
  outcome result;
  beast::flat_buffer buffer(net::request_header_limit);
  std::size_t pos = 0;
  for (int requests = 0;; ++requests) {
    check(requests <= 100'000, "more requests than bytes");
    net::request_parser parser;
    net::limit_request_parser(parser);
    beast::error_code ec;
    for (;;) {
      ec = net::parse_buffered(buffer, parser);
      if (ec != http::error::need_more) break;
      if (pos == bytes.size()) {
        ec = net::parse_eof(parser);
        break;
      }
      const std::size_t room = buffer.max_size() - buffer.size();
      check(room > 0, "parse_buffered asked for more with a full buffer");
      const std::size_t n = std::min({read_size, room, bytes.size() - pos});
      const auto space = buffer.prepare(n);
      std::memcpy(space.data(), bytes.data() + pos, n);
      buffer.commit(n);
      pos += n;
    }
    if (ec) {
      // The connection loop: a client that went away gets nothing, a bad request a 400.
      if (ec == http::error::end_of_stream) {
        result.end = "closed";
      } else {
        check(ec.category() == make_error_code(http::error::end_of_stream).category(),
              "a read error of another category", ec.message());
        const auto res = net::make_response(http::status::bad_request,
                                            "bad request: " + ec.message() + "\n", 11, false);
        check_response(res, false);
        result.end = "400";
      }
      return result;
    }
    const auto& req = parser.get();
    if (const auto refused = net::refuse_framing(req)) {
      // The connection loop: an untrustworthy framing or Host is answered and the connection
      // closed, whatever the request asked; nothing after it on the connection is read.
      check(refused->status == http::status::bad_request ||
                refused->status == http::status::not_implemented,
            "a framing refusal other than 400 or 501");
      check(!refused->why.empty() && refused->why.find('\n') == std::string::npos,
            "a framing refusal that is not one line");
      const auto res = net::make_response(refused->status, refused->why + "\n", 11, false);
      check_response(res, false);
      result.end = std::to_string(res.result_int());
      return result;
    }
    const bool keep_alive = req.keep_alive();
    const net::route r = net::route_request(req);
    const net::response res = answer(r, req.version(), keep_alive);
    check_response(res, keep_alive);
    result.routed.push_back(std::string(req.method_string()) + " " + std::string(req.target()) +
                            " -> " + std::to_string(res.result_int()));
    if (!res.keep_alive()) {
      result.end = "answered and closed";
      return result;
    }
  }
}

}  // namespace

// Boost assertions stay on (BOOST_ENABLE_ASSERT_HANDLER, fuzz/CMakeLists.txt) and abort, but for
// one that is wrong: Beast 1.81 asserts at least 5 bytes after a final chunk "0\r\n" even when
// fewer are valid and it then asks for more, fixed upstream in boostorg/beast#2861 (May 2024).
// Release builds compile the assertion out; regressions/http_request/beast-final-chunk-in-pieces.
namespace boost {
void assertion_failed(char const* expr, char const* function, char const* file, long line) {
  if (std::string_view(expr) == "n >= 5" &&
      std::string_view(file).ends_with("beast/http/impl/basic_parser.ipp")) {
    return;
  }
  std::fprintf(stderr, "%s:%ld: %s: Boost assertion '%s' failed\n", file, line, function, expr);
  std::abort();
}
void assertion_failed_msg(char const* expr, char const* msg, char const* function, char const* file,
                          long line) {
  std::fprintf(stderr, "%s: ", msg);
  assertion_failed(expr, function, file, line);
}
}  // namespace boost

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t read_size = data[0] == 0 ? net::request_header_limit : std::size_t{data[0]};
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const outcome split = serve(bytes, read_size);
    const outcome whole = serve(bytes, net::request_header_limit);
    if (!(split == whole)) {
      std::string detail = "split: " + split.end + ", whole: " + whole.end + "; requests " +
                           std::to_string(split.routed.size()) + " vs " +
                           std::to_string(whole.routed.size());
      backoff::fuzz::fail("the outcome depends on how the bytes were read", detail);
    }
  } catch (const std::exception& e) {
    backoff::fuzz::fail("an exception escaped the request handling", e.what());
  }
  return 0;
}
