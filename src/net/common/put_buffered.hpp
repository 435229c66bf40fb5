// SPDX-License-Identifier: Apache-2.0
// Feeding a Beast parser the bytes already read, for serve's request parser and load's answer
// parser alike. One put() stops after the header unless the parser is eager, so a body that came
// in the same read as its header needs another put: without the loop a reader waits for bytes it
// already has.
//
//   auto ec = put_buffered(buffer, parser, [&](const auto& bytes, std::size_t used) {
//     keep.append(static_cast<const char*>(bytes.data()), used);   // optional: see what it took
//   });
//   // {} once the message is complete (what follows it stays in `buffer`), need_more, or the
//   // parser's error; buffer_overflow when `buffer` is full and the message still incomplete.
#pragma once

#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>

namespace backoff::net {

// `taken(buffer.data(), used)` sees the bytes of each put before they leave the buffer.
template <class Parser, class Taken>
boost::beast::error_code put_buffered(boost::beast::flat_buffer& buffer, Parser& parser,
                                      Taken&& taken) {
  namespace http = boost::beast::http;
  while (buffer.size() > 0) {
    boost::beast::error_code ec;
    const std::size_t used = parser.put(buffer.data(), ec);
    taken(buffer.data(), used);
    buffer.consume(used);
    if (parser.is_done()) return {};
    if (ec == http::error::need_more) break;
    if (ec) return ec;
    if (used == 0) break;
  }
  if (buffer.size() == buffer.max_size()) return http::error::buffer_overflow;
  return http::error::need_more;
}

template <class Parser>
boost::beast::error_code put_buffered(boost::beast::flat_buffer& buffer, Parser& parser) {
  return put_buffered(buffer, parser, [](const auto&, std::size_t) {});
}

}  // namespace backoff::net
