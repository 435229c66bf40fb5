// SPDX-License-Identifier: Apache-2.0
// --set overrides (`key=value`) on a parsed file, before anything reads it, and how messages
// name the keys they set. The simulator's scenario::load applies the user's; scenario::at applies
// a sweep point's values the same way. The key reader and the map reader split dotted keys as
// overrides do.
//
//   for (const auto& s : sets) apply_override(root, s);  // s = "server.max_busy=100"
//   auto named = set_labels(sets);  // named["server.max_busy"] == "--set server.max_busy"
#pragma once

#include <toml++/toml.h>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace backoff::config {

// "a.b.c" as {"a", "b", "c"} (an empty part stays, for the caller to refuse).
std::vector<std::string> split_path(std::string_view key);

// How messages name the keys the overrides set: "--set KEY".
std::map<std::string, std::string, std::less<>> set_labels(const std::vector<std::string>& sets);

// Applies one `key=value` to `root`: the value read as TOML, or a bare word as a string; tables
// on the way are made, and a number indexes an array of tables ("clients.0.arrivals"). A key
// that [knobs] names sets each key path of the knob instead. Returns the key paths it set.
// Throws config_error naming the override.
std::vector<std::string> apply_override(toml::table& root, const std::string& assignment);

}  // namespace backoff::config
