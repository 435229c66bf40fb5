// SPDX-License-Identifier: Apache-2.0
#include "handler.hpp"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <initializer_list>
#include <iterator>
#include <vector>

#include "backoff/error.hpp"
#include "net/common/put_buffered.hpp"

namespace backoff::net {
namespace {

// "/admin/pause?for=10s&x=y" -> the value of `for`, if any; nullopt when absent.
std::optional<std::string_view> query_value(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

route with_kind(route_kind kind) {
  route r;
  r.kind = kind;
  return r;
}

// A 400 for the first query parameter not in `known`; none when all are known.
std::optional<route> unknown_parameter(std::string_view query,
                                       std::initializer_list<std::string_view> known) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::string_view name = pair.substr(0, pair.find('='));
    if (!name.empty() && std::find(known.begin(), known.end(), name) == known.end()) {
      route r = with_kind(route_kind::bad_request);
      std::string names;
      for (const auto k : known) names += (names.empty() ? "" : ", ") + std::string(k);
      r.error = "unknown parameter '" + escape_controls(std::string(name).substr(0, 64)) +
                "' (known: " + (names.empty() ? std::string("none") : names) + ")";
      return r;
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

route not_allowed(std::string_view allow) {
  route r;
  r.kind = route_kind::method_not_allowed;
  r.allow = allow;
  return r;
}

}  // namespace

namespace {

bool is_tchar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) != 0 ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// uri-host [ ":" port ] (RFC 3986 section 3.2.2): a reg-name or IPv4 address of unreserved,
// pct-encoded and sub-delims characters, or an IP literal in brackets; the port digits only. An
// empty value is valid (RFC 9112 section 3.2: a target without an authority).
bool is_valid_host(std::string_view host) {
  std::string_view name = host;
  std::string_view port;
  if (!name.empty() && name.front() == '[') {
    const std::size_t close = name.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view literal = name.substr(1, close - 1);
    if (literal.empty() || !std::all_of(literal.begin(), literal.end(), [](char c) {
          return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
        })) {
      return false;
    }
    port = name.substr(close + 1);
    if (!port.empty() && port.front() != ':') return false;
    name = {};
  } else if (const std::size_t colon = name.find(':'); colon != std::string_view::npos) {
    port = name.substr(colon);
    name = name.substr(0, colon);
  }
  if (!port.empty()) {
    port.remove_prefix(1);
    if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("-._~%!$&'()*+,;=").find(c) != std::string_view::npos;
  });
}

}  // namespace

std::optional<request_refusal> refuse_framing(const http::request_header<>& req) {
  const auto refuse = [](http::status status, std::string why) {
    return std::optional<request_refusal>(request_refusal{status, std::move(why)});
  };
  const auto codings = req.equal_range(http::field::transfer_encoding);
  if (codings.first != codings.second) {
    if (std::next(codings.first) != codings.second) {
      return refuse(http::status::bad_request, "more than one Transfer-Encoding field");
    }
    if (req.version() < 11) {
      return refuse(http::status::bad_request,
                    "Transfer-Encoding in an HTTP/1.0 request (RFC 9112 section 6.1)");
    }
    // The list's elements, as a recipient must read them: empty ones are skipped.
    std::vector<std::string_view> list;
    for (const auto element : http::token_list(codings.first->value())) list.push_back(element);
    const std::string_view value = codings.first->value();
    // token_list stops at a byte that is not a token: "chunked;x" or "chunked x" must not pass
    // as a list of fewer elements than were sent.
    std::size_t seen = 0;
    for (const auto element : list) seen += element.size();
    const auto tchars =
        static_cast<std::size_t>(std::count_if(value.begin(), value.end(), is_tchar));
    const bool well_formed = seen == tchars && std::all_of(value.begin(), value.end(), [](char c) {
                               return is_tchar(c) || c == ',' || c == ' ' || c == '\t';
                             });
    const auto is_chunked = [](std::string_view coding) {
      return boost::beast::iequals(coding, "chunked");
    };
    if (!well_formed || list.empty() || !is_chunked(list.back())) {
      return refuse(http::status::bad_request,
                    "the final transfer coding is not chunked, so the body's length is unknown "
                    "(RFC 9112 section 6.3)");
    }
    if (std::count_if(list.begin(), list.end(), is_chunked) > 1) {
      return refuse(http::status::bad_request,
                    "chunked applied more than once (RFC 9112 section 7)");
    }
    if (list.size() > 1) {
      return refuse(http::status::not_implemented,
                    "transfer codings other than chunked are not supported");
    }
  }
  const auto hosts = req.equal_range(http::field::host);
  if (hosts.first == hosts.second) {
    if (req.version() >= 11) {
      return refuse(http::status::bad_request, "an HTTP/1.1 request needs a Host header");
    }
  } else if (std::next(hosts.first) != hosts.second) {
    return refuse(http::status::bad_request, "more than one Host field (RFC 9112 section 3.2)");
  } else if (!is_valid_host(hosts.first->value())) {
    return refuse(http::status::bad_request, "the Host field is not host[:port]");
  }
  return std::nullopt;
}

route route_request(http::verb method, std::string_view target) {
  const std::size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query = q == std::string_view::npos ? "" : target.substr(q + 1);
  const bool read = method == http::verb::get || method == http::verb::head;
  // The seed's Go server answers /api whatever the method (http.HandleFunc): so does this one.
  if (path == "/api") return with_kind(route_kind::api);
  if (path == "/metrics") return read ? with_kind(route_kind::metrics) : not_allowed("GET, HEAD");
  if (path == "/admin/resume") {
    if (method != http::verb::post) return not_allowed("POST");
    if (auto unknown = unknown_parameter(query, {})) return *unknown;
    return with_kind(route_kind::resume);
  }
  if (path == "/admin/pause") {
    if (method != http::verb::post) return not_allowed("POST");
    // A misspelt ?for= would otherwise pause until someone resumes.
    if (auto unknown = unknown_parameter(query, {"for"})) return *unknown;
    route r = with_kind(route_kind::pause);
    if (const auto value = query_value(query, "for")) {
      try {
        r.pause_for = parse_duration(*value);
      } catch (const parse_error& e) {
        r = with_kind(route_kind::bad_request);
        r.error = std::string("bad ?for= duration: ") + e.what();
      }
    }
    return r;
  }
  return with_kind(route_kind::not_found);
}

route route_request(const http::request<http::string_body>& req, const admin_access& access) {
  if (req.version() == 11 && req.find(http::field::host) == req.end()) {
    route r = with_kind(route_kind::bad_request);
    r.error = "an HTTP/1.1 request needs a Host header";
    return r;
  }
  const std::string_view target = req.target();
  if (target.substr(0, 7) == "/admin/" || target.substr(0, target.find('?')) == "/admin") {
    if (auto refused = refuse_admin(req, access)) return *refused;
  }
  return route_request(req.method(), target);
}

bool is_loopback_host(std::string_view host) {
  std::string_view name = host;
  std::string_view port;
  if (!name.empty() && name.front() == '[') {  // [::1] or [::1]:8070
    const std::size_t close = name.find(']');
    if (close == std::string_view::npos) return false;
    port = name.substr(close + 1);
    name = name.substr(1, close - 1);
    if (!port.empty() && port.front() != ':') return false;
  } else if (const std::size_t colon = name.find(':'); colon != std::string_view::npos) {
    port = name.substr(colon);
    name = name.substr(0, colon);
  }
  if (!port.empty()) {
    port.remove_prefix(1);  // the ':'
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
  }
  if (name.size() == 9 && std::equal(name.begin(), name.end(), "localhost", [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == b;
      })) {
    return true;
  }
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(std::string(name), ec);
  if (ec) return false;
  // A bare IPv6 address must come in brackets ("Host: ::1" is no valid Host).
  if (address.is_v6() && host.front() != '[') return false;
  return address.is_loopback();
}

bool equal_in_constant_time(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const char g = i < given.size() ? given[i] : '\0';
    diff |= static_cast<unsigned char>(g ^ expected[i]);
  }
  return diff == 0;
}

std::optional<route> refuse_admin(const http::request<http::string_body>& req,
                                  const admin_access& access) {
  const auto refuse = [](route_kind kind, std::string why) {
    route r = with_kind(kind);
    r.error = std::move(why);
    return r;
  };
  const auto quoted = [](std::string_view value) {
    return quote_for_message(value.substr(0, 100));
  };
  if (!access.loopback && access.token.empty()) {
    return refuse(route_kind::forbidden,
                  "admin endpoints are off: the server listens on a non-loopback address "
                  "without --admin-token");
  }
  if (access.loopback) {
    // DNS rebinding: a page on evil.example.com whose name now resolves to 127.0.0.1.
    const auto host = req.find(http::field::host);
    if (host == req.end() || !is_loopback_host(host->value())) {
      return refuse(route_kind::forbidden,
                    "admin endpoints answer loopback Hosts only (localhost, 127.0.0.1, [::1]), "
                    "got " +
                        (host == req.end() ? std::string("no Host") : quoted(host->value())));
    }
    // A cross-origin request (a form or fetch() on some page): its Origin is not this server's.
    if (const auto origin = req.find(http::field::origin); origin != req.end()) {
      const std::string_view value = origin->value();
      std::string_view authority;
      bool https = false;
      if (value.substr(0, 7) == "http://") {
        authority = value.substr(7);
      } else if (value.substr(0, 8) == "https://") {
        authority = value.substr(8);
        https = true;
      }
      // The port the Origin names: its own, or the scheme's.
      std::uint16_t origin_port = https ? 443 : 80;
      if (const std::size_t colon = authority.rfind(':');
          colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
        origin_port = 0;
        const std::string_view digits = authority.substr(colon + 1);
        if (digits.size() <= 5 && std::all_of(digits.begin(), digits.end(),
                                              [](char c) { return c >= '0' && c <= '9'; })) {
          unsigned long n = digits.empty() ? 0 : std::stoul(std::string(digits));
          origin_port = n <= 65535 ? static_cast<std::uint16_t>(n) : 0;
        }
      }
      if (authority.empty() || !is_loopback_host(authority) || origin_port != access.port) {
        return refuse(route_kind::forbidden,
                      "admin endpoints refuse cross-origin requests, got Origin " + quoted(value));
      }
    }
    if (const auto site = req.find("Sec-Fetch-Site");
        site != req.end() && site->value() == "cross-site") {
      return refuse(route_kind::forbidden,
                    "admin endpoints refuse cross-origin requests (Sec-Fetch-Site: cross-site)");
    }
  }
  if (!access.token.empty()) {
    const auto auth = req.find(http::field::authorization);
    const std::string_view given =
        auth == req.end() ? std::string_view{} : std::string_view(auth->value());
    constexpr std::string_view scheme = "bearer ";
    const bool bearer = given.size() > scheme.size() &&
                        std::equal(scheme.begin(), scheme.end(), given.begin(), [](char s, char g) {
                          return s == std::tolower(static_cast<unsigned char>(g));
                        });
    if (!bearer || !equal_in_constant_time(given.substr(scheme.size()), access.token)) {
      return refuse(route_kind::unauthorized,
                    auth == req.end() ? "admin endpoints need \"Authorization: Bearer TOKEN\""
                                      : "admin endpoints: wrong token");
    }
  }
  return std::nullopt;
}

void limit_request_parser(request_parser& parser) {
  parser.header_limit(request_header_limit);
  parser.body_limit(request_body_limit);
}

boost::beast::error_code parse_buffered(boost::beast::flat_buffer& buffer, request_parser& parser) {
  // The parser is not eager: put_buffered's loop gives a body that came with its header.
  return put_buffered(buffer, parser);
}

boost::beast::error_code parse_eof(request_parser& parser) {
  if (!parser.got_some()) return http::error::end_of_stream;
  boost::beast::error_code ec;
  parser.put_eof(ec);
  if (!ec && parser.is_done()) return {};
  return ec ? ec : http::error::partial_message;
}

response make_response(http::status status, std::string body, unsigned version, bool keep_alive) {
  response res{status, version};
  res.set(http::field::server, "backoff");
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

response make_rejection(http::status status, duration retry_after, unsigned version,
                        bool keep_alive) {
  response res =
      make_response(status, std::string(http::obsolete_reason(status)) + "\n", version, keep_alive);
  // Rounded up without adding first: `count + 999'999'999` overflowed near duration::max().
  constexpr duration::rep second = 1'000'000'000;
  const duration::rep count = std::max<duration::rep>(retry_after.count(), 0);
  const duration::rep seconds = count / second + (count % second != 0 ? 1 : 0);
  res.set(http::field::retry_after, std::to_string(seconds));
  return res;
}

}  // namespace backoff::net
