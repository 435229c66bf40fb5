// SPDX-License-Identifier: Apache-2.0
// The strategy's limiter: the three limiters' spec texts behind one name, and its construction.
#include "backoff/limiter.hpp"

#include <array>
#include <string>

#include "overload_spec.hpp"

namespace backoff {

namespace {

constexpr std::array<std::string_view, 3> limiter_names = {"bulkhead", "limit", "rate"};

}  // namespace

limiter_config parse_limiter(std::string_view text) {
  const spec_call call = parse_spec_call(text, "limiter");
  if (call.name == "bulkhead") return parse_bulkhead(text);
  if (call.name == "limit") return parse_limit(text);
  if (call.name == "rate") return parse_rate_limiter(text);
  detail::unknown_name("limiter", text, "limiter", call.name, limiter_names);
}

std::string to_string(const limiter_config& config) {
  return std::visit([](const auto& c) { return c.to_string(); }, config);
}

std::string_view limiter_name(const limiter_config& config) noexcept {
  return limiter_names[config.index()];
}

bool may_queue(const limiter_config& config) noexcept {
  const auto* b = std::get_if<bulkhead_config>(&config);
  return b != nullptr && b->queue > 0;
}

limiter::limiter(const limiter_config& config, std::uint64_t seed) : config_(config) {
  if (const auto* b = std::get_if<bulkhead_config>(&config)) {
    limiter_.emplace<bulkhead>(*b);
  } else if (const auto* l = std::get_if<limit_config>(&config)) {
    limiter_.emplace<concurrency_limiter>(*l, seed);
  } else {
    limiter_.emplace<rate_limiter>(std::get<rate_limiter_config>(config));
  }
}

}  // namespace backoff
