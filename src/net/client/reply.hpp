// SPDX-License-Identifier: Apache-2.0
// What `backoff load` takes from a server's answer, and how it reads it without building a
// message: a parser that keeps only the status, the keep-alive verdict, Retry-After and gRPC's
// grpc-retry-pushback-ms, and a
// small cache of answers met before, recognised by their bytes (the server sends nearly every
// answer with the same bytes; parsing them was a quarter of the client's instructions per
// request). Internal to the load client (src/net/client).
//
//   answer_reader answer;
//   reply_head head;
//   beast::error_code ec = answer.take(buffer, known, head);   // {} once complete, or need_more
//   if (ec == http::error::need_more) { /* read more into buffer, then take again */ }
//   // at the end of the stream: answer.take_eof(buffer, head)
#pragma once

#include <array>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backoff/duration.hpp"
#include "backoff/verdict.hpp"

namespace backoff::net::load_detail {

namespace beast = boost::beast;
namespace http = beast::http;

enum class reply_kind { ok, error, timeout, cancelled };

// An attempt's outcome, as the retry loop judges it.
struct reply {
  reply_kind kind = reply_kind::error;
  int status = 0;
  // The server's wait: its Retry-After (a minimum), or its grpc-retry-pushback-ms (`pushback`:
  // the wait itself, after which the backoff starts again from its first step).
  std::optional<duration> retry_after;
  bool pushback = false;
  // A negative or malformed grpc-retry-pushback-ms: the server asks not to retry (gRFC A6).
  bool do_not_retry = false;
};

// Any failure is retried, as the seed's client does, unless the server asked not to retry it
// (grpc-retry-pushback-ms, read by the library's parse_grpc_retry_pushback: http.hpp); its
// Retry-After or pushback is honoured.
inline verdict classify_reply(const reply& r) {
  switch (r.kind) {
    case reply_kind::ok:
      return verdict::success();
    case reply_kind::timeout:
    case reply_kind::cancelled:
      return verdict::retryable();
    case reply_kind::error: {
      if (r.do_not_retry) return verdict::permanent();
      verdict v = verdict::retryable(r.retry_after);
      v.pushback = r.pushback;
      return v;
    }
  }
  return verdict::retryable();
}

// What the client takes from an answer.
struct reply_head {
  int status = 0;
  bool keep_alive = true;  // as http::message::keep_alive() says
  std::optional<std::string> retry_after;
  std::optional<std::string> grpc_retry_pushback;  // grpc-retry-pushback-ms
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
  std::optional<std::string> grpc_retry_pushback;
  std::optional<std::string> connection_field;  // the first Connection field, when there is one

  // As http::message::keep_alive() judges it (the first Connection field's tokens and the
  // version), not as the parser's own keep_alive(), which the client did not use before.
  reply_head head() const {
    return {status, message_keep_alive(), retry_after, grpc_retry_pushback};
  }

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
  void on_field_impl(http::field name, beast::string_view name_text, beast::string_view value,
                     beast::error_code&) override {
    if (name == http::field::retry_after && !retry_after) {
      retry_after.emplace(value);
    } else if (name == http::field::connection && !connection_field) {
      connection_field.emplace(value);
    } else if (name == http::field::unknown && !grpc_retry_pushback &&
               beast::iequals(name_text, "grpc-retry-pushback-ms")) {
      grpc_retry_pushback.emplace(value);
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
// (Content-Length, chunked, or no body), not those delimited by the end of the stream.
class known_replies {
 public:
  static constexpr std::size_t max_bytes = 512;  // longer answers are parsed each time

  struct entry {
    std::string bytes;
    reply_head head;
  };

  // The answer that `data` begins with, or nullptr; `prefix` tells whether `data` is the
  // beginning of a known answer, not all of it (more bytes may make it one).
  const entry* find(std::string_view data, bool& prefix) const;
  void remember(std::string bytes, const reply_head& head);

 private:
  std::array<entry, 4> entries_;
  std::size_t used_ = 0, next_ = 0;
};

// One answer being read from a connection's buffer: a known one by its bytes, or else through
// the parser, which then remembers it (known_replies).
class answer_reader {
 public:
  // From the bytes buffered: {} once the answer is complete (`head` set, what follows it left in
  // `buffer`), http::error::need_more, or the parser's error.
  beast::error_code take(beast::flat_buffer& buffer, known_replies& known, reply_head& head);
  // The end of the stream came instead of more bytes: {} when that completes the answer (a body
  // delimited by the close), otherwise the error http::async_read gave.
  beast::error_code take_eof(beast::flat_buffer& buffer, reply_head& head);

 private:
  void start_parser();

  std::optional<reply_parser> parser_;  // engaged once the bytes are not those of a known answer
  std::string taken_;                   // the bytes the parser took, to remember the answer by
  bool too_long_ = false;               // more than known_replies::max_bytes: not remembered
};

}  // namespace backoff::net::load_detail
