// SPDX-License-Identifier: Apache-2.0
// Fuzzes the spec parsers: parse_policy, parse_window, parse_budget, parse_throttle,
// parse_breaker, parse_hedge and parse_deadline (src/core/spec.cpp, aimd_window.cpp,
// retry_budget.cpp, throttle.cpp, circuit_breaker.cpp, hedge.cpp, deadline.cpp), each fed the
// whole input, and the tokenizer's lists.
// Asserts, for each: it returns or throws backoff::parse_error and nothing else; the error is one
// line starting "bad <kind> "; a spec that parses validates, and its canonical text (to_string)
// parses back to an equal value whose text is the same. For a policy also: its delays are never
// negative, and never above max when cap=after.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "backoff/aimd_window.hpp"
#include "backoff/circuit_breaker.hpp"
#include "backoff/deadline.hpp"
#include "backoff/error.hpp"
#include "backoff/hedge.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "backoff/throttle.hpp"
#include "fuzz_check.hpp"

namespace {

using backoff::fuzz::check;
using backoff::fuzz::check_message;

// Runs parse(text); on success checks the round trip through text_of; on failure the message.
template <class Parse, class TextOf>
void round_trip(std::string_view kind, std::string_view text, Parse parse, TextOf text_of) {
  const std::string prefix = "bad " + std::string(kind) + " \"";
  try {
    const auto value = parse(text);
    const std::string canonical = text_of(value);
    try {
      const auto again = parse(canonical);
      check(again == value, "the canonical text parses to another value", canonical);
      check(text_of(again) == canonical, "the canonical text is not stable", canonical);
    } catch (const backoff::parse_error& e) {
      backoff::fuzz::fail("the canonical text does not parse", canonical + " -> " + e.what());
    }
  } catch (const backoff::parse_error& e) {
    check_message(e.what(), prefix);
  } catch (const std::exception& e) {
    backoff::fuzz::fail("an exception other than parse_error", e.what());
  }
}

void check_delays(const backoff::backoff_policy& p) {
  backoff::random_generator rng(42);
  backoff::backoff_state state = p.start();
  for (int k = 0; k < 70; ++k) {
    const backoff::duration d = state.next_delay(rng);
    check(d.count() >= 0, "a negative delay", p.to_string());
    if (p.cap == backoff::cap_mode::after) {
      check(d <= p.max, "a delay above max with cap=after", p.to_string());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  round_trip("policy", text, backoff::parse_policy, [](const backoff::backoff_policy& p) {
    p.validate();
    return p.to_string();
  });
  try {
    check_delays(backoff::parse_policy(text));
  } catch (const backoff::parse_error&) {
  }

  round_trip("window", text, backoff::parse_window, [](const backoff::aimd_config& c) {
    c.validate();
    return c.to_string();
  });
  round_trip("budget", text, backoff::parse_budget,
             [](const backoff::budget_config& c) { return backoff::to_string(c); });
  round_trip("throttle", text, backoff::parse_throttle,
             [](const backoff::throttle_config& c) { return backoff::to_string(c); });
  round_trip("breaker", text, backoff::parse_breaker, [](const backoff::breaker_config& c) {
    c.validate();
    return c.to_string();
  });
  round_trip("hedge", text, backoff::parse_hedge, [](const backoff::hedge_policy& p) {
    p.validate();
    return p.to_string();
  });
  round_trip("deadline", text, backoff::parse_deadline, [](const backoff::deadline_config& c) {
    c.validate();
    return c.to_string();
  });

  // The tokenizer alone: arguments are non-empty, columns inside the text.
  try {
    const backoff::spec_call call = backoff::parse_spec_call(text, "spec");
    check(!call.name.empty(), "a spec call without a name");
    for (const auto& arg : call.arguments) {
      check(!arg.key.empty() && !arg.value.empty(), "an empty key or value", arg.key);
      check(arg.column >= 1 && arg.column <= text.size(), "a column outside the text");
      check(text.substr(arg.column - 1, arg.key.size()) == arg.key, "a column not at its key");
      check(arg.is_list || arg.items.empty(), "items on a value that is not a list", arg.key);
      check(!arg.is_list || (arg.value.front() == '[' && arg.value.back() == ']'),
            "a list whose text is not bracketed", arg.value);
      for (const auto& item : arg.items) {
        check(!item.empty() && item.find_first_of(",[]()") == std::string::npos,
              "a list item that is empty or holds a separator", item);
      }
    }
  } catch (const backoff::parse_error& e) {
    check_message(e.what(), "bad spec \"");
  }
  return 0;
}
