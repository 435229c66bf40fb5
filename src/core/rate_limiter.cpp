// SPDX-License-Identifier: Apache-2.0
// Rate limiters (rate_limiter.hpp): the spec reader, checks and canonical text.
#include "backoff/rate_limiter.hpp"

#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff {
namespace {

using namespace std::chrono_literals;
using detail::spec_number_text;

constexpr std::string_view rate_what = "rate limiter";
constexpr std::string_view rate_names[] = {"rate"};
constexpr duration rate_max_wait = 24h;

constexpr spec_key<rate_limiter_config> rate_keys[] = {
    {"per_s", all_variants, "a number in [0.001, 1000000000]", "100",
     "tokens added per second, one every 1/per_s s (to the nanosecond)",
     [](rate_limiter_config& c, const spec_value& v) { c.per_s = v.number(); },
     [](const rate_limiter_config& c) -> std::optional<std::string> {
       return spec_number_text(c.per_s);
     }},
    detail::whole_number_key<&rate_limiter_config::burst, 1, rate_limiter::max_burst>(
        "burst", all_variants, "a whole number in 1..1000000", "1",
        "tokens the bucket holds; it starts full"),
    {"wait", all_variants, "a duration in [0, 1d]", "0s",
     "the longest wait for a reserved token; 0: refuse when the bucket is empty",
     [](rate_limiter_config& c, const spec_value& v) { c.wait = v.time(); },
     [](const rate_limiter_config& c) -> std::optional<std::string> {
       return format_duration(c.wait);
     }},
};

}  // namespace

void rate_limiter_config::validate() const {
  if (!(std::isfinite(per_s) && per_s >= rate_limiter::min_per_s &&
        per_s <= rate_limiter::max_per_s)) {
    throw parse_error("per_s=" + spec_number_text(per_s) + " must be in [0.001, 1000000000]");
  }
  if (burst < 1 || burst > rate_limiter::max_burst) {
    throw parse_error("burst=" + std::to_string(burst) + " must be a whole number in 1..1000000");
  }
  if (wait < duration{0} || wait > rate_max_wait) {
    throw parse_error("wait=" + format_duration(wait) + " must be in [0, 1d]");
  }
}

std::string rate_limiter_config::to_string() const {
  return write_spec(rate_names[0], rate_keys, *this);
}

rate_limiter_config parse_rate_limiter(std::string_view text) {
  return detail::read_named_spec(rate_what, "rate limiter", text, rate_names, rate_keys);
}

std::string detail::rate_keys_markdown() {
  return key_table_markdown(rate_keys, spec_variants{rate_names, {}});
}

}  // namespace backoff
