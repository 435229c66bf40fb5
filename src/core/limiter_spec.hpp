// SPDX-License-Identifier: Apache-2.0
// Internal to the bulkhead and rate limiter spec readers (bulkhead.cpp, rate_limiter.cpp): their
// key tables for the docs (spec_keys_markdown registers them as "bulkhead" and "rate"), and the
// reader of a whole-number key both use.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff::detail {

std::string bulkhead_keys_markdown();
std::string rate_keys_markdown();

// The key's value as a whole number in lo..hi, or a one-line error naming the key.
inline std::uint32_t limiter_whole_number(const spec_value& v, std::uint32_t lo, std::uint32_t hi) {
  const double x = v.number();
  if (!(x >= lo && x <= hi && x == std::floor(x))) {
    spec_fail(v.what, v.spec,
              v.arg.key + "=" + v.text() + " must be a whole number in " + std::to_string(lo) +
                  ".." + std::to_string(hi));
  }
  return static_cast<std::uint32_t>(x);
}

}  // namespace backoff::detail
