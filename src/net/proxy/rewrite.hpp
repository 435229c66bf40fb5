// SPDX-License-Identifier: Apache-2.0
// How `backoff proxy` rewrites the messages it relays, without I/O: hop-by-hop fields out, the
// framing its own parser read in (never the client's fields as they came), this proxy in Via, an
// origin-form target, a Date where the answer has none. The connection loop (proxy.cpp) reads a
// message's header, rewrites it here, and relays it.
//
//   request_relay_parser parser;  ... co_await http::async_read_header(client, buffer, parser,
//   ...); rewrite_request(parser.get(), parser, {.host = "127.0.0.1", .port = 8080, .pseudonym =
//   p});
//   ... forward parser.get() upstream, read the answer into answer_parser ...
//   const bool keep_alive = rewrite_answer(answer_parser.get(), answer_parser, 11, true, p);
#pragma once

#include <boost/beast/core/error.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace backoff::net::proxy_detail {

namespace http = boost::beast::http;

using request_relay_parser = http::request_parser<http::buffer_body>;
using response_relay_parser = http::response_parser<http::buffer_body>;

// Errors of the HTTP parser (the message does not parse), as opposed to the connection's.
bool is_parse_error(const boost::beast::error_code& ec);

// The request's path without its query, for the metrics path and the faults; an absolute-form
// target ("http://host:port/path?q") counts by its path.
std::string_view path_of(std::string_view target);

// This second's HTTP-date: the Date of the proxy's own answers and of relayed ones without one.
std::string http_date_now();

// The bytes of one of the proxy's own answers.
std::string serialize(const http::response<http::string_body>& res);

// Where a request goes and how the proxy names itself there.
struct upstream_target {
  std::string_view host;
  std::uint16_t port = 0;
  bool rewrite_host = false;   // Host: host:port instead of the client's
  std::string_view pseudonym;  // this proxy in Via
};

// A request as it goes upstream, from its header as the client sent it (Expect removed: the
// caller answers 100-continue itself): hop-by-hop fields out, the parser's framing, this proxy in
// Via, an origin-form target, HTTP/1.1 keep-alive, and Host as `to` says.
void rewrite_request(http::request<http::buffer_body>& req, const request_relay_parser& parser,
                     const upstream_target& to);

// An informational answer (1xx but 101) as it goes to an HTTP/1.1 client: hop-by-hop fields and
// framing out, this proxy in Via.
void rewrite_interim(http::response<http::buffer_body>& interim, std::string_view pseudonym);

// An answer's header as it goes to a client of HTTP `client_version`: hop-by-hop fields out, the
// parser's framing adapted to the client (a body that ends with the upstream connection goes
// chunked to an HTTP/1.1 client; an HTTP/1.0 one gets no chunks and a close), this proxy in Via,
// a Date if it had none. Returns whether the client's connection stays open after it.
bool rewrite_answer(http::response<http::buffer_body>& res, const response_relay_parser& parser,
                    unsigned client_version, bool client_keep_alive, std::string_view pseudonym);

}  // namespace backoff::net::proxy_detail
