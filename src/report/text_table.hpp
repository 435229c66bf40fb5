// SPDX-License-Identifier: Apache-2.0
// The one text-table printer (the comparison table of `sim`, `sweep` and `load`, `backoff delays`,
// `backoff presets`): columns padded to their widest cell, two spaces apart, no trailing spaces.
// Cells go through escape_controls, so a name with an escape sequence or a line break cannot
// drive the terminal or break a row.
//
//   report::text_table t{.rows = {{"strategy", "p99"}, {"EB", "1.2"}}, .left_columns = 1};
//   std::cout << t.render();
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace backoff::report {

struct text_table {
  std::vector<std::vector<std::string>> rows;  // the header is the first row, if any
  std::size_t left_columns = 0;  // the first columns are left-aligned, the others right-aligned
  std::string render() const;    // each row ends in '\n'
};

}  // namespace backoff::report
