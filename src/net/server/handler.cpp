#include "handler.hpp"

#include <algorithm>
#include <initializer_list>

#include "backoff/error.hpp"

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

route route_request(const http::request<http::string_body>& req) {
  if (req.version() == 11 && req.find(http::field::host) == req.end()) {
    route r = with_kind(route_kind::bad_request);
    r.error = "an HTTP/1.1 request needs a Host header";
    return r;
  }
  return route_request(req.method(), req.target());
}

void limit_request_parser(request_parser& parser) {
  parser.header_limit(request_header_limit);
  parser.body_limit(request_body_limit);
}

boost::beast::error_code parse_buffered(boost::beast::flat_buffer& buffer, request_parser& parser) {
  // One put() stops after the header (the parser is not eager), so a body that came in the same
  // read as its header needs another: without it the server waited for bytes it already had.
  while (buffer.size() > 0) {
    boost::beast::error_code ec;
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (parser.is_done()) return {};
    if (ec == http::error::need_more) break;
    if (ec) return ec;
    if (used == 0) break;
  }
  if (buffer.size() == buffer.max_size()) return http::error::buffer_overflow;
  return http::error::need_more;
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
  const auto seconds = (retry_after.count() + 999'999'999) / 1'000'000'000;
  res.set(http::field::retry_after, std::to_string(seconds));
  return res;
}

}  // namespace backoff::net
