// SPDX-License-Identifier: Apache-2.0
#include "text_table.hpp"

#include <algorithm>

#include "backoff/error.hpp"

namespace backoff::report {

std::string text_table::render() const {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    auto& shown = cells.emplace_back();
    for (const auto& cell : row) shown.push_back(escape_controls(cell));
    if (width.size() < shown.size()) width.resize(shown.size(), 0);
    for (std::size_t c = 0; c < shown.size(); ++c) width[c] = std::max(width[c], shown[c].size());
  }
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      const std::string pad(width[c] - row[c].size(), ' ');
      line += c < left_columns ? row[c] + pad : pad + row[c];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace backoff::report
