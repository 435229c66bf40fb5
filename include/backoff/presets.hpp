// SPDX-License-Identifier: Apache-2.0
// Named policies, each exactly as its source defines it (docs/POLICIES.md lists them). A preset is
// an ordinary backoff_policy; parse_policy("gcp-iot(max=32s)") starts from the preset and overrides
// keys.
//
//   for (const auto& p : backoff::presets()) std::cout << p.name << ": " << p.formula << '\n';
//   const backoff::preset* grpc = backoff::find_preset("grpc");
//
// The presets from "Exploring backoff" (2019) (none, constant, uniform, exponential,
// exponential-random) count in "units": one unit is one second here, and one tick in the
// simulator's tick model.
#pragma once

#include <span>
#include <string_view>

#include "backoff/export.hpp"
#include "backoff/policy.hpp"

namespace backoff {

struct preset {
  std::string_view name;
  std::string_view formula;  // the delay before retry n (n = 0 first), as the source writes it
  std::string_view source;   // where it comes from
  backoff_policy policy;
};

// Every preset, in a fixed order (the order of docs/POLICIES.md's table).
BACKOFF_EXPORT std::span<const preset> presets();

// nullptr when no preset has that name.
BACKOFF_EXPORT const preset* find_preset(std::string_view name) noexcept;

}  // namespace backoff
