// SPDX-License-Identifier: Apache-2.0
// The one text-table printer (the comparison table of `sim`, `sweep` and `load`, `backoff delays`,
// `backoff presets`): columns padded to their widest cell, two spaces apart, no trailing spaces.
// Cells go through escape_controls, so a name with an escape sequence or a line break cannot
// drive the terminal or break a row.
//
//   report::text_table t{.rows = {{"strategy", "p99"}, {"EB", "1.2"}}, .left_columns = 1};
//   std::cout << t.render();
//
// A table too long to hold (`backoff delays` with millions of rows) is printed row by row with
// text_columns instead: measure() every cell of every row first (a first pass over the data),
// then append_row() each row (a second pass). The lines are the same bytes render() gives.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace backoff::report {

struct text_table {
  std::vector<std::vector<std::string>> rows;  // the header is the first row, if any
  std::size_t left_columns = 0;  // the first columns are left-aligned, the others right-aligned
  std::string render() const;    // each row ends in '\n'
};

struct text_columns {
  std::vector<std::size_t> width;  // grows with the columns measure() sees
  std::size_t left_columns = 0;    // as in text_table

  // Widens `column` to hold `cell` (as printed: escaped).
  void measure(std::size_t column, std::string_view cell);
  // Appends one row, padded to the measured widths, ending in '\n'. Every cell must have been
  // measured; a row may have fewer cells than there are columns.
  void append_row(std::string& out, const std::vector<std::string>& cells) const;
};

}  // namespace backoff::report
