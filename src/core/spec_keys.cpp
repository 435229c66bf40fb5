// SPDX-License-Identifier: Apache-2.0
// The kind-independent half of spec key tables (spec_keys.hpp): key lists, did-you-mean, and the
// markdown the docs carry.
#include "backoff/spec_keys.hpp"

#include <string>

#include "backoff/concurrency_limit.hpp"
#include "overload_spec.hpp"

namespace backoff {

std::string join_names(std::span<const std::string_view> names) {
  std::string out;
  for (const std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

std::string name_hint(std::string_view word, std::span<const std::string_view> names) {
  const std::string_view best = closest_name(word, names);
  if (best.empty()) return "";
  return "; did you mean '" + std::string(best) + "'?";
}

std::string applies_to_text(variant_set applies_to, const spec_variants& variants) {
  const variant_set every_name =
      variants.names.size() >= 32 ? all_variants : (variant_bit(variants.names.size()) - 1);
  const variant_set one_group[] = {every_name};
  const std::span<const variant_set> groups =
      variants.groups.empty() ? std::span<const variant_set>(one_group) : variants.groups;
  std::string out;
  for (const variant_set group : groups) {
    const variant_set chosen = applies_to & group;
    if (chosen == group) continue;  // every variant of this dimension: nothing to say
    std::string part;
    for (std::size_t i = 0; i < variants.names.size(); ++i) {
      if ((chosen & variant_bit(i)) == 0) continue;
      if (!part.empty()) part += ", ";
      part += variants.names[i];
    }
    if (!out.empty()) out += " with ";
    out += part;
  }
  return out.empty() ? "all" : out;
}

std::string key_table_markdown(std::span<const spec_key_row> rows, const spec_variants& variants) {
  std::string out = "| key | applies to | values | default | meaning |\n|---|---|---|---|---|\n";
  for (const spec_key_row& r : rows) {
    out += "| `" + std::string(r.name) + "` | " + applies_to_text(r.applies_to, variants) + " | " +
           std::string(r.values) + " | " + std::string(r.default_value) + " | " +
           std::string(r.meaning) + " |\n";
  }
  return out;
}

std::string spec_keys_markdown(std::string_view kind) {
  if (kind == "policy") return detail::policy_keys_markdown();
  if (kind == "window") return detail::window_keys_markdown();
  if (kind == "budget") return detail::budget_keys_markdown();
  if (kind == "throttle") return detail::throttle_keys_markdown();
  if (kind == "breaker") return detail::breaker_keys_markdown();
  if (kind == "hedge") return detail::hedge_keys_markdown();
  if (kind == "deadline") return detail::deadline_keys_markdown();
  if (kind == "bulkhead") return detail::bulkhead_keys_markdown();
  if (kind == "limit") return detail::limit_keys_markdown();
  if (kind == "rate") return detail::rate_keys_markdown();
  if (kind == "fallback") return detail::fallback_keys_markdown();
  return "";
}

}  // namespace backoff
