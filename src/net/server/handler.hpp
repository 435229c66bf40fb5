// SPDX-License-Identifier: Apache-2.0
// The request handler of `backoff serve`, without I/O: what a request asks for, and the responses
// the server sends. The connection loop (server.cpp) reads a request, asks route_request() what it
// is, does the waiting an /api request needs, and writes the response built here. Unit tests drive
// this layer directly (tests/net/server_test.cpp, Handler.*).
//
//   const route r = route_request(req.method(), req.target());
//   switch (r.kind) { case route_kind::api: ... serve with the seed's delay ...
//                     case route_kind::pause: server.pause(r.pause_for); ... }
//
// The contract is seed 004's (smira/exponential-backoff, server.go): /api answers 200 "OK" to any
// method, and an HTTP/1.1 request without Host gets 400, as its Go server does.
// Beyond the seed: GET /metrics (Prometheus text), POST /admin/pause[?for=DURATION] and
// POST /admin/resume (an unknown query parameter is a 400); 503 or 429 with Retry-After when
// --max-busy is reached. /admin/* is guarded (admin_access below): a web page the operator
// happens to visit must not be able to pause the server.
#pragma once

#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backoff/duration.hpp"

namespace backoff::net {

namespace http = boost::beast::http;

enum class route_kind {
  api,                 // /api, any method (as the seed's Go server): the seed's service
  metrics,             // GET /metrics
  pause,               // POST /admin/pause[?for=D]
  resume,              // POST /admin/resume
  not_found,           // 404
  method_not_allowed,  // 405: a known path with another method
  bad_request,         // 400: e.g. a bad ?for= value
  forbidden,           // 403: /admin/* from a foreign Host or Origin, or admin is off
  unauthorized,        // 401: /admin/* without the right "Authorization: Bearer TOKEN"
};

struct route {
  route_kind kind = route_kind::not_found;
  std::optional<duration> pause_for;  // pause: resume by itself after this long
  std::string error;                  // bad_request, forbidden, unauthorized: why, one line
  std::string_view allow;             // method_not_allowed: the Allow header
};

// Who may use /admin/* (docs/NETWORK.md, "Admin endpoints"); /api and /metrics stay open.
//  - Listening on a loopback address: the Host must be a loopback name (localhost, 127.x.x.x,
//    [::1], any port: a DNS-rebound name is refused) and the request must not be cross-origin
//    (an Origin other than http://LOOPBACK:port itself, or Sec-Fetch-Site: cross-site): 403.
//  - Listening elsewhere without a token: every /admin request is refused (403, saying why).
//  - With a token: "Authorization: Bearer TOKEN" is required as well (401 without it), compared
//    in constant time.
struct admin_access {
  bool loopback = true;    // the server listens on a loopback address
  std::uint16_t port = 0;  // the port it listens on (a same-origin Origin names it)
  std::string token;       // empty: no token
};

// 403 or 401 when `req` may not use /admin/* under `access`, nullopt when it may.
std::optional<route> refuse_admin(const http::request<http::string_body>& req,
                                  const admin_access& access);
// "localhost", "127.0.0.1", "[::1]", each with or without ":PORT".
bool is_loopback_host(std::string_view host);
// Equal contents, in a time that depends only on `expected`'s length.
bool equal_in_constant_time(std::string_view given, std::string_view expected);

// A request the server must refuse before anything else, and close the connection after: its
// framing or its Host cannot be trusted, so what follows it on the connection cannot either.
struct request_refusal {
  http::status status = http::status::bad_request;
  std::string why;  // one line
};

// RFC 9112's rules that Beast's parser leaves to its user (it refuses by itself a Content-Length
// beside a Transfer-Encoding, Content-Length values that differ, and one that is not digits):
//  - Transfer-Encoding (section 6.1, 6.3): the one accepted is a single field "chunked" in an
//    HTTP/1.1 request. A final coding other than chunked ("gzip", "chunked, identity",
//    "xchunked"), chunked twice, an empty list, two fields, or any in HTTP/1.0: 400, since the
//    body's length cannot be known. Another coding before a final chunked ("gzip, chunked"):
//    501, since nothing here decodes it. Beast's parser takes a body it cannot frame as empty, so
//    the bytes of such a body would otherwise be read as the next request.
//  - Host (section 3.2): none in an HTTP/1.1 request, more than one field, or a value that is not
//    uri-host[:port]: 400. A check that reads just the first Host (the admin guard) would
//    otherwise judge a request by another Host than the one a proxy in front of it routed on.
// serve calls it on every request, the proxy on every request it reads; nullopt: go on.
std::optional<request_refusal> refuse_framing(const http::request_header<>& req);

route route_request(http::verb method, std::string_view target);
// The route of a whole request: as above, but an HTTP/1.1 request without Host is a 400 (RFC 9112
// section 3.2; the seed's Go server answers it so; serve refuses it earlier, in refuse_framing),
// and /admin/* goes through refuse_admin().
route route_request(const http::request<http::string_body>& req, const admin_access& access = {});

// Reading a request: the server keeps one flat_buffer of request_header_limit bytes per
// connection and a fresh parser, set up by limit_request_parser(), per request; a client cannot
// make a connection hold more memory than that. parse_buffered() is the I/O-free step of its read
// loop (and what fuzz/http_request_fuzzer.cpp drives): it feeds the buffered bytes to the parser
// and consumes what the parser took, leaving pipelined bytes for the next request. It returns
// {} when a request is complete, http::error::need_more when the parser needs more bytes than
// the buffer holds, http::error::buffer_overflow when the buffer is full without a whole header,
// and otherwise the parser's error.
inline constexpr std::uint32_t request_header_limit = 8 * 1024;
inline constexpr std::uint64_t request_body_limit = 64 * 1024;

using request_parser = http::request_parser<http::string_body>;

void limit_request_parser(request_parser& parser);
boost::beast::error_code parse_buffered(boost::beast::flat_buffer& buffer, request_parser& parser);
// The end of the stream after parse_buffered() asked for more: {} when that completes the
// request, http::error::end_of_stream when no byte of one had arrived, otherwise the error
// (http::error::partial_message for a request cut short).
boost::beast::error_code parse_eof(request_parser& parser);

using response = http::response<http::string_body>;

// A plain-text response with the seed's headers; `keep_alive` and `version` from the request.
response make_response(http::status status, std::string body, unsigned version, bool keep_alive);

// The answer when --max-busy is reached: `status` (503 or 429) with Retry-After in whole
// seconds, rounded up (RFC 9110 allows no fractions).
response make_rejection(http::status status, duration retry_after, unsigned version,
                        bool keep_alive);

}  // namespace backoff::net
