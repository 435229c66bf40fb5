// SPDX-License-Identifier: Apache-2.0
#include "text_table.hpp"

#include <algorithm>

#include "backoff/error.hpp"

namespace backoff::report {
namespace {

// Most cells (numbers, durations, names) have nothing to escape: they are printed without a copy.
bool needs_escape(std::string_view cell) {
  return std::any_of(cell.begin(), cell.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

}  // namespace

void text_columns::measure(std::size_t column, std::string_view cell) {
  if (width.size() <= column) width.resize(column + 1, 0);
  const std::size_t shown = needs_escape(cell) ? escape_controls(cell).size() : cell.size();
  width[column] = std::max(width[column], shown);
}

void text_columns::append_row(std::string& out, const std::vector<std::string>& cells) const {
  const std::size_t start = out.size();
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (c > 0) out += "  ";
    const std::string escaped = needs_escape(cells[c]) ? escape_controls(cells[c]) : std::string();
    const std::string_view shown = escaped.empty() ? std::string_view(cells[c]) : escaped;
    const std::size_t pad = width[c] - shown.size();
    if (c >= left_columns) out.append(pad, ' ');
    out += shown;
    if (c < left_columns) out.append(pad, ' ');
  }
  while (out.size() > start && out.back() == ' ') out.pop_back();
  out += '\n';
}

std::string text_table::render() const {
  text_columns columns{.width = {}, .left_columns = left_columns};
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) columns.measure(c, row[c]);
  }
  std::string out;
  for (const auto& row : rows) columns.append_row(out, row);
  return out;
}

}  // namespace backoff::report
