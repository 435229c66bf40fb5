// SPDX-License-Identifier: Apache-2.0
// Hedging policies: range checks, canonical text, the spec reader and the HTTP classification.
#include "backoff/hedge.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/http.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
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

constexpr std::string_view hedge_names[] = {"hedge"};

constexpr spec_key<hedge_policy> hedge_keys[] = {
    {"max_attempts", all_variants, "a whole number in 1..5", "required",
     "copies of the call at most, the first included (gRPC A6's cap is 5)",
     [](hedge_policy& p, const spec_value& v) {
       const double n = v.number();
       if (!(n >= 1.0 && n <= hedge_policy::max_attempts_limit && n == std::floor(n))) {
         detail::spec_fail(v.what, v.spec,
                           "max_attempts=" + v.text() + " must be a whole number in 1.." +
                               std::to_string(hedge_policy::max_attempts_limit) +
                               " (gRPC A6's cap on copies of a call)");
       }
       p.max_attempts = static_cast<std::uint32_t>(n);
     },
     [](const hedge_policy& p) -> std::optional<std::string> {
       return std::to_string(p.max_attempts);
     }},
    {"delay", all_variants, "a duration in [0, 1d]", "0s",
     "a copy is sent every `delay` while none answered; 0: all at once",
     [](hedge_policy& p, const spec_value& v) {
       if (v.arg.is_list) detail::spec_fail(v.what, v.spec, "delay=" + v.text() + " is a list");
       p.delay = v.time();
     },
     [](const hedge_policy& p) -> std::optional<std::string> { return signed_duration(p.delay); }},
    {"non_fatal", all_variants, "a list of HTTP statuses, `[429, 503]`; one alone: `503`", "`[]`",
     "a status that sends the next copy at once; any other failure status is fatal",
     [](hedge_policy& p, const spec_value& v) {
       for (const std::string& item : spec_list(v.spec, v.arg, v.what)) {
         int status = 0;
         const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), status);
         if (ec != std::errc{} || end != item.data() + item.size() || status < lowest_status ||
             status > highest_status) {
           detail::spec_fail(
               v.what, v.spec,
               "non_fatal: " + detail::quoted(item) + " is not an HTTP status (100..599)");
         }
         p.non_fatal.push_back(status);
       }
     },
     [](const hedge_policy& p) -> std::optional<std::string> { return status_list(p.non_fatal); }},
};

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
  return write_spec(hedge_names[0], hedge_keys, *this);
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
  if (call.name != hedge_names[0]) {
    detail::unknown_name(hedge_what, text, "spec", call.name, hedge_names);
  }
  hedge_policy p;
  p.max_attempts = 0;  // required: no default, and 0 is below any value it reads
  detail::read_spec_keys(hedge_what, text, call, hedge_keys, p);
  if (p.max_attempts == 0) detail::spec_fail(hedge_what, text, "max_attempts is required (1..5)");
  p.non_fatal = sorted_set(std::move(p.non_fatal));
  detail::validate_spec(hedge_what, text, p);
  return p;
}

std::string detail::hedge_keys_markdown() {
  return key_table_markdown(hedge_keys, spec_variants{hedge_names, {}});
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
