// SPDX-License-Identifier: Apache-2.0
#include "connection.hpp"

namespace backoff::net::load_detail {

void watchdog::expired() {
  armed = steady::time_point::max();
  if (socket == nullptr || deadline == steady::time_point::max()) return;
  if (steady::now() >= deadline) {
    fired = true;
    deadline = steady::time_point::max();
    boost::system::error_code ignored;
    socket->cancel(ignored);  // the attempt's pending connect, wait or write ends now
  } else {
    wait_until(deadline);
  }
}

void connection::close() {
  watch->disarm();
  if (socket.is_open()) {
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }
  buffer.clear();
}

}  // namespace backoff::net::load_detail
