// SPDX-License-Identifier: Apache-2.0
// What the readers of TOML files share about its nodes, so that every message names a place and
// a type the same way and every value written back as TOML reads alike: the key reader's checks,
// and the simulator's strategies, sweeps and metastable maps.
//
//   throw config_error(position(node.source(), path) + ": x: expected a string, found " +
//                      type_name(node));
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>

namespace backoff::config {

// "file:line:col" of a region; `fallback_path` when toml++ was given no path for it.
std::string position(const toml::source_region& region, const std::string& fallback_path);

// "an integer", "a table", ...: what a message says it found.
std::string type_name(const toml::node& n);

// The shortest text that reads back as `v` ("0.1", "1e-06").
std::string number_text(double v);

// A TOML basic string holding `text`.
std::string toml_quote(std::string_view text);

}  // namespace backoff::config
