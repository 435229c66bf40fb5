// SPDX-License-Identifier: Apache-2.0
// Hedging policies: range checks, canonical text, the spec reader and the HTTP classification.
#include "backoff/hedge.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/http.hpp"
#include "backoff/spec.hpp"
#include "overload_spec.hpp"

namespace backoff {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view hedge_what = "hedge";
constexpr int lowest_status = 100;
constexpr int highest_status = 599;

std::vector<int> sorted_set(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string signed_duration(duration d) {
  return d < duration{0} ? "-" + format_duration(-d) : format_duration(d);
}

// The text between the brackets of non_fatal=[...], each status once, in order.
std::string status_list(const std::vector<int>& statuses) {
  std::string out = "[";
  for (const int s : sorted_set(statuses)) {
    if (out.size() > 1) out += ", ";
    out += std::to_string(s);
  }
  return out + "]";
}

}  // namespace

void hedge_policy::validate() const {
  if (max_attempts < 1 || max_attempts > max_attempts_limit) {
    throw parse_error("max_attempts=" + std::to_string(max_attempts) + " must be in 1.." +
                      std::to_string(max_attempts_limit) + " (gRPC A6's cap on copies of a call)");
  }
  if (delay < duration{0} || delay > duration{24h}) {
    throw parse_error("delay=" + signed_duration(delay) + " must be in [0, 1d]");
  }
  for (const int s : non_fatal) {
    if (s < lowest_status || s > highest_status) {
      throw parse_error("non_fatal=" + status_list(non_fatal) + " lists " + std::to_string(s) +
                        ", not an HTTP status (100..599)");
    }
  }
}

std::string hedge_policy::to_string() const {
  return "hedge(max_attempts=" + std::to_string(max_attempts) +
         ", delay=" + signed_duration(delay) + ", non_fatal=" + status_list(non_fatal) + ")";
}

verdict hedge_policy::classify_status(int status, std::optional<duration> retry_after) const {
  if (status >= 100 && status <= 399) return classify_http_status(status);
  if (is_non_fatal(status)) return verdict::retryable(retry_after);
  return verdict::permanent();
}

bool operator==(const hedge_policy& a, const hedge_policy& b) {
  return a.max_attempts == b.max_attempts && a.delay == b.delay &&
         sorted_set(a.non_fatal) == sorted_set(b.non_fatal);
}

hedge_policy parse_hedge(std::string_view text) {
  const spec_call call = parse_spec_call(text, hedge_what);
  if (call.name != "hedge") {
    detail::spec_fail(hedge_what, text,
                      "unknown spec " + detail::quoted(call.name) + " (known: hedge)");
  }
  hedge_policy p;
  bool has_max_attempts = false;
  for (const spec_argument& arg : call.arguments) {
    if (arg.key == "max_attempts") {
      const double v = spec_number(text, arg, hedge_what);
      if (!(v >= 1.0 && v <= hedge_policy::max_attempts_limit && v == std::floor(v))) {
        detail::spec_fail(hedge_what, text,
                          "max_attempts=" + arg.value + " must be a whole number in 1.." +
                              std::to_string(hedge_policy::max_attempts_limit) +
                              " (gRPC A6's cap on copies of a call)");
      }
      p.max_attempts = static_cast<std::uint32_t>(v);
      has_max_attempts = true;
    } else if (arg.key == "delay") {
      if (arg.is_list) detail::spec_fail(hedge_what, text, "delay=" + arg.value + " is a list");
      p.delay = spec_duration(text, arg, hedge_what);
    } else if (arg.key == "non_fatal") {
      for (const std::string& item : spec_list(text, arg, hedge_what)) {
        int status = 0;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), status);
        if (ec != std::errc{} || end != item.data() + item.size() || status < lowest_status ||
            status > highest_status) {
          detail::spec_fail(
              hedge_what, text,
              "non_fatal: " + detail::quoted(item) + " is not an HTTP status (100..599)");
        }
        p.non_fatal.push_back(status);
      }
    } else {
      detail::unknown_parameter(hedge_what, text, arg, "max_attempts, delay, non_fatal");
    }
  }
  if (!has_max_attempts) detail::spec_fail(hedge_what, text, "max_attempts is required (1..5)");
  p.non_fatal = sorted_set(std::move(p.non_fatal));
  detail::validate_spec(hedge_what, text, p);
  return p;
}

std::string_view to_string(hedge_stop s) noexcept {
  switch (s) {
    case hedge_stop::none:
      return "none";
    case hedge_stop::max_attempts:
      return "max_attempts";
    case hedge_stop::pushback:
      return "pushback";
    case hedge_stop::budget:
      return "budget";
    case hedge_stop::throttle:
      return "throttle";
    case hedge_stop::breaker:
      return "breaker";
  }
  return "none";
}

}  // namespace backoff
