// SPDX-License-Identifier: Apache-2.0
// Did-you-mean for every reader of the toolkit: a misspelt spec key, scenario key, subcommand or
// flag is answered with the closest name that exists.
//
//   std::string hint = backoff::did_you_mean("facotr", {"initial", "factor", "max"});
//   // hint == " (did you mean 'factor'?)"; "" when nothing is close enough
#pragma once

#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "backoff/export.hpp"

namespace backoff {

// Edits between a and b, a swap of two neighbours counting as one (optimal string alignment):
// "tyr" is one edit from "try".
BACKOFF_EXPORT std::size_t edit_distance(std::string_view a, std::string_view b);

// The name closest to `word`, or "" when none is within two edits and less than half its length
// away (so that "x" does not suggest "max").
BACKOFF_EXPORT std::string_view closest_name(std::string_view word,
                                             std::span<const std::string_view> names);

// " (did you mean 'NAME'?)" for the closest name, or "" when none is close.
BACKOFF_EXPORT std::string did_you_mean(std::string_view word,
                                        std::span<const std::string_view> names);
inline std::string did_you_mean(std::string_view word,
                                std::initializer_list<std::string_view> names) {
  return did_you_mean(word, std::span<const std::string_view>(names.begin(), names.size()));
}

}  // namespace backoff
