// SPDX-License-Identifier: Apache-2.0
// The Date header every answer of `backoff serve` carries, and the answer nearly every request
// gets with it, serialized once a second rather than per request (server.cpp).
#pragma once

#include <chrono>
#include <sstream>
#include <string>

#include "backoff/http.hpp"
#include "handler.hpp"

namespace backoff::net {

// The Date every answer carries (RFC 9110 section 6.6.1: an origin server with a clock sends
// it), and make_response(200, "OK") for HTTP/1.1 keep-alive with that Date, serialized once a
// second rather than per request. One per worker thread: refresh() reads the clock (the vDSO,
// no system call) and does more only when the second changed.
class dated_answers {
 public:
  void refresh() {
    const auto second = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    if (second == second_) return;
    second_ = second;
    date_ = format_http_date(second);
    response res = make_response(http::status::ok, "OK", 11, true);
    res.set(http::field::date, date_);
    std::ostringstream out;
    out << res;
    ok_keep_alive_ = out.str();
  }
  const std::string& date() const { return date_; }
  const std::string& ok_keep_alive() const { return ok_keep_alive_; }

 private:
  std::chrono::sys_seconds second_{std::chrono::sys_seconds::min()};
  std::string date_;
  std::string ok_keep_alive_;
};

}  // namespace backoff::net
