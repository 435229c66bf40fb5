// SPDX-License-Identifier: Apache-2.0
#include "request_io.hpp"

#include <boost/asio/error.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>

namespace backoff::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

bool is_malformed_request(const beast::error_code& read_error) {
  return read_error.category() == make_error_code(http::error::end_of_stream).category() &&
         read_error != http::error::end_of_stream;
}

std::optional<asio::const_buffer> send_at_once(socket_type& socket, asio::const_buffer bytes) {
  beast::error_code error;
  const std::size_t sent = socket.write_some(bytes, error);
  if (error == asio::error::would_block || error == asio::error::try_again) return bytes;
  if (error) return std::nullopt;
  return bytes + sent;
}

task<beast::error_code> read_request(socket_type& socket, beast::flat_buffer& buffer,
                                     request_parser& parser, connection_entry& entry,
                                     duration header_timeout) {
  for (;;) {
    if (const beast::error_code parsed = parse_buffered(buffer, parser);
        parsed != http::error::need_more) {
      entry.enter_busy();
      co_return parsed;
    }
    if (entry.now != connection_entry::phase::reading && (buffer.size() > 0 || parser.got_some())) {
      entry.enter(connection_entry::phase::reading, header_timeout);
    }
    const auto [wait_error] = co_await socket.async_wait(tcp::socket::wait_read, on_loop);
    if (entry.closing) co_return asio::error::operation_aborted;
    if (wait_error) co_return wait_error;
    beast::error_code ec;
    const std::size_t n = socket.read_some(buffer.prepare(beast::read_size(buffer, 65536)), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) continue;
    if (ec == asio::error::eof) co_return parse_eof(parser);
    if (ec) co_return ec;
    buffer.commit(n);
  }
}

}  // namespace backoff::net
