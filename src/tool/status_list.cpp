// SPDX-License-Identifier: Apache-2.0
#include "status_list.hpp"

#include <charconv>

#include "backoff/error.hpp"

namespace backoff::tool {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_status(std::string_view s, int& out) {
  if (s.empty() || s.size() > 3) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size() && out >= 0 && out <= 255;
}

}  // namespace

bool status_list::matches(int status) const noexcept {
  for (const range& r : ranges_) {
    if (status >= r.lo && status <= r.hi) return true;
  }
  return false;
}

status_list parse_status_list(std::string_view text) {
  status_list list;
  list.text_ = std::string(text);
  const auto fail = [&](std::string_view item, std::string_view why) {
    throw parse_error("bad status list " + quote_for_message(text) + ": item " +
                      quote_for_message(item) + " " + std::string(why));
  };
  if (trim(text).empty()) fail(text, "is empty (use success, fail, N or N-M)");
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item =
        trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
    if (item == "success" || item == "true") {
      list.ranges_.push_back({0, 0});
    } else if (item == "fail" || item == "false") {
      list.ranges_.push_back({1, 255});
    } else if (const std::size_t dash = item.find('-'); dash != std::string_view::npos) {
      int lo = 0;
      int hi = 0;
      if (!parse_status(item.substr(0, dash), lo) || !parse_status(item.substr(dash + 1), hi)) {
        fail(item, "is not a range N-M of statuses 0-255");
      }
      if (lo > hi) fail(item, "is an empty range (N must not exceed M)");
      list.ranges_.push_back({lo, hi});
    } else {
      int status = 0;
      if (!parse_status(item, status)) {
        fail(item, "is not success, fail, a status 0-255 or a range N-M");
      }
      list.ranges_.push_back({status, status});
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return list;
}

}  // namespace backoff::tool
