// SPDX-License-Identifier: Apache-2.0
// What the [sweep] axes and the [[map]] loads share: one value read from TOML, as the text
// outputs show and the TOML that sets it again (a point or a probe is the scenario with overrides
// of these, overrides.hpp), and the keys neither may vary. Internal to src/sim/scenario.
//
//   report::sweep_value v = value_of(node, "file:4:1", "clients");  // 100: toml "100", text "100"
//   if (is_identity_key("seed")) refuse();                          // use replications instead
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>

#include "report/result.hpp"

namespace backoff::sim::scenario_detail {

// An integer, number, boolean or string; anything else (or a number that is not finite) is
// refused as "AT: sweep.KEY: ...".
report::sweep_value value_of(const toml::node& n, const std::string& at, const std::string& key);

// The keys that say which scenario this is and how it is run as a whole (scenario, model, seed,
// about.*, replications, strategy*, sweep*): a sweep axis or a map that set one would no longer
// vary one scenario.
bool is_identity_key(std::string_view key);

}  // namespace backoff::sim::scenario_detail
