// SPDX-License-Identifier: Apache-2.0
// Which exit statuses end the retrying: `--until success,75,100-110` or `--while 1-3`. Every item
// of the list counts (Debian's `retry` 1.0.5 looks only at the first: `-u 3,4` retries on 4).
//
//   status_list until = parse_status_list("success,75");   // throws parse_error on bad text
//   until.matches(0);   // true
//   until.matches(75);  // true
//   until.matches(1);   // false
//
// Statuses are the ones the tool reports: exit codes, 124 for a timeout, 128+n for signal n.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace backoff::tool {

class status_list {
 public:
  bool matches(int status) const noexcept;
  const std::string& text() const noexcept { return text_; }

 private:
  friend status_list parse_status_list(std::string_view text);
  struct range {
    int lo;
    int hi;
  };
  std::vector<range> ranges_;  // inclusive; "fail" is 1-255
  std::string text_;
};

// Items: `success` (or `true`, status 0), `fail` (or `false`, 1-255), `N`, `N-M` (0 <= N <= M <=
// 255), separated by commas, blanks allowed. The error names the bad item.
status_list parse_status_list(std::string_view text);

}  // namespace backoff::tool
