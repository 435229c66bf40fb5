// SPDX-License-Identifier: Apache-2.0
#include "net/proxy/rewrite.hpp"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <sstream>
#include <vector>

#include "backoff/http.hpp"
#include "net/proxy/proxy.hpp"
#include "net/server/server.hpp"

namespace backoff::net::proxy_detail {
namespace {

namespace beast = boost::beast;

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

}  // namespace

bool is_parse_error(const beast::error_code& ec) {
  return ec.category() == make_error_code(http::error::end_of_stream).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message &&
         ec != http::error::need_buffer;
}

std::string_view path_of(std::string_view target) {
  target = origin_form(target);
  return target.substr(0, target.find('?'));
}

std::string serialize(const http::response<http::string_body>& res) {
  std::ostringstream out;
  out << res;
  return out.str();
}

std::string http_date_now() {
  return format_http_date(
      std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
}

void rewrite_request(http::request<http::buffer_body>& req, const request_relay_parser& parser,
                     const upstream_target& to) {
  const unsigned version = req.version();
  remove_hop_by_hop(req);
  frame_request(req, parser);
  append_via(req, version, to.pseudonym);
  if (const std::string_view target = req.target(); origin_form(target) != target) {
    req.target(std::string(origin_form(target)));
  }
  req.version(11);
  req.keep_alive(true);
  // The Host the client sent goes on unchanged (the upstream may route on it), unless
  // --rewrite-host asks for the upstream's own; an HTTP/1.0 request without one gets it, since
  // it leaves as HTTP/1.1 (RFC 9112 section 3.2).
  if (to.rewrite_host || req.find(http::field::host) == req.end()) {
    req.set(http::field::host, authority(to.host, to.port));
  }
}

void rewrite_interim(http::response<http::buffer_body>& interim, std::string_view pseudonym) {
  const unsigned received = interim.version();
  remove_hop_by_hop(interim);
  interim.erase(http::field::content_length);
  interim.erase(http::field::transfer_encoding);
  append_via(interim, received, pseudonym);
  interim.version(11);
}

bool rewrite_answer(http::response<http::buffer_body>& res, const response_relay_parser& parser,
                    unsigned client_version, bool client_keep_alive, std::string_view pseudonym) {
  const bool until_eof = !parser.is_done() && !parser.chunked() && !parser.content_length();
  bool keep_alive = client_keep_alive;
  const std::string codings = joined_values(res, http::field::transfer_encoding);
  const unsigned received = res.version();
  remove_hop_by_hop(res);
  frame_response(res, parser, codings);
  append_via(res, received, pseudonym);
  // RFC 9110 section 6.6.1: a recipient with a clock forwarding an answer without Date adds one.
  if (res.find(http::field::date) == res.end()) res.set(http::field::date, http_date_now());
  res.version(client_version);
  if (until_eof) {
    // A body that ends with the upstream connection: an HTTP/1.1 client gets it chunked and
    // keeps its connection; an HTTP/1.0 one gets it up to the close, as the upstream sent it.
    if (client_version == 11) {
      res.chunked(true);
    } else {
      keep_alive = false;
    }
  } else if (parser.chunked() && client_version != 11) {
    res.chunked(false);  // HTTP/1.0 has no chunks: the body ends with the connection
    keep_alive = false;
  }
  res.keep_alive(keep_alive);
  return keep_alive;
}

}  // namespace backoff::net::proxy_detail

namespace backoff::net {

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

}  // namespace backoff::net
