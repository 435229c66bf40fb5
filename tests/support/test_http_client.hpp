// SPDX-License-Identifier: Apache-2.0
// A blocking HTTP/1.1 client on one loopback connection, for the network harness's tests
// (server, faults, proxy): requests with chosen header fields, raw bytes, and checks that the
// peer closed or reset the connection.
#pragma once

#include <poll.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace backoff::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// A blocking HTTP/1.1 client on one connection.
class http_client {
 public:
  explicit http_client(std::uint16_t port) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }
  http::response<http::string_body> request(http::verb method, const std::string& target) {
    return request(method, target, {{"Host", "127.0.0.1"}});
  }
  // With these header fields (Host among them, or none).
  http::response<http::string_body> request(http::verb method, const std::string& target,
                                            const std::map<std::string, std::string>& fields) {
    http::request<http::empty_body> req{method, target, 11};
    for (const auto& [name, value] : fields) req.set(name, value);
    http::write(socket_, req);
    return read();
  }
  http::response<http::string_body> read() {
    http::response<http::string_body> res;
    http::read(socket_, buffer_, res);
    return res;
  }
  // The answer to a HEAD request: a header only, whatever its Content-Length says.
  http::response<http::string_body> read_head() {
    http::response_parser<http::string_body> parser;
    parser.skip(true);
    http::read(socket_, buffer_, parser);
    return parser.release();
  }
  void send_raw(const std::string& text) { asio::write(socket_, asio::buffer(text)); }
  // True when the server closed the connection.
  bool closed_by_server() {
    beast::error_code ec;
    char byte;
    socket_.read_some(asio::buffer(&byte, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }
  // True when bytes (or the close) arrive within `limit`, or some are buffered already.
  bool readable_within(std::chrono::milliseconds limit) {
    pollfd p{socket_.native_handle(), POLLIN, 0};
    return buffer_.size() != 0 || ::poll(&p, 1, static_cast<int>(limit.count())) == 1;
  }
  // True when the server closes the connection within `limit` (without sending anything more).
  bool closed_by_server_within(std::chrono::milliseconds limit) {
    pollfd p{socket_.native_handle(), POLLIN, 0};
    if (buffer_.size() != 0 || ::poll(&p, 1, static_cast<int>(limit.count())) != 1) return false;
    return closed_by_server();
  }
  // The error that ends the next read within `limit` (eof for a close, connection_reset for a
  // reset), or timed_out when nothing happened by then.
  beast::error_code read_error_within(std::chrono::milliseconds limit) {
    pollfd p{socket_.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(limit.count())) != 1) return asio::error::timed_out;
    beast::error_code ec;
    char byte;
    socket_.read_some(asio::buffer(&byte, 1), ec);
    return ec;
  }
  void close() { socket_.close(); }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

}  // namespace backoff::test
