// SPDX-License-Identifier: Apache-2.0
#include "backoff/spelling.hpp"

#include <algorithm>
#include <vector>

namespace backoff {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the table are all the recurrence reads (the swap looks two rows back).
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t change = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + change});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string_view closest_name(std::string_view word, std::span<const std::string_view> names) {
  std::string_view best;
  std::size_t best_distance = 3;
  for (const std::string_view name : names) {
    const std::size_t d = edit_distance(word, name);
    if (d < best_distance && 2 * d < std::max(word.size(), name.size())) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, std::span<const std::string_view> names) {
  const std::string_view best = closest_name(word, names);
  if (best.empty()) return {};
  return " (did you mean '" + std::string(best) + "'?)";
}

}  // namespace backoff
