// SPDX-License-Identifier: Apache-2.0
// Fuzzes the fault plans of `backoff serve` and `backoff proxy` (src/faults): the
// whole input as a TOML schedule (serve --faults FILE), and as one fault spec (--fault SPEC).
// Asserts: each returns or throws its documented error type and nothing else, with a one-line
// message (a schedule's starts "f.toml:", a spec's "bad fault \""); a spec that parses has a
// canonical text that parses to the same canonical text; and every decision of a plan that
// parses is sane: an injected status in 200..599, a delay of at most a day, a window's hold
// within the plan's times, and a reset, a hold and an answer never together.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "backoff/error.hpp"
#include "backoff/random.hpp"
#include "faults/faults.hpp"
#include "fuzz_check.hpp"

namespace {

using backoff::fuzz::check;
using backoff::fuzz::check_message;

void check_decisions(const backoff::faults::fault_plan& plan, std::string_view text) {
  backoff::random_generator rng(7);
  const backoff::faults::request_view view{"/api/users/42", [](std::string_view name) {
                                             return name == "x-shard" ? std::string_view("3")
                                                                      : std::string_view{};
                                           }};
  for (const auto t : {0LL, 1'000'000'000LL, 10'000'000'000LL, 3'600'000'000'000LL}) {
    const auto d = backoff::faults::decide(plan, backoff::duration{t}, view, rng);
    const std::string detail(text);
    if (d.abort_status) {
      check(*d.abort_status >= 200 && *d.abort_status <= 599, "an injected status outside 200-599",
            detail);
    }
    check(d.delay >= backoff::duration{0} && d.delay <= std::chrono::hours(24),
          "a delay outside 0 to 24h", detail);
    const int outcomes = (d.reset ? 1 : 0) + (d.hold_until ? 1 : 0) + (d.abort_status ? 1 : 0);
    check(outcomes <= 1, "a reset, a hold and an answer at once", detail);
    if (d.hold_until)
      check(*d.hold_until > backoff::duration{t}, "a hold that ended already", detail);
    check(!(d.slow && d.abort_status), "a slow body for a request that is not served", detail);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const backoff::faults::fault_plan plan = backoff::faults::parse_fault_schedule(text, "f.toml");
    check_decisions(plan, text);
  } catch (const backoff::faults::fault_schedule_error& e) {
    check_message(e.what(), "f.toml:");
  } catch (const std::exception& e) {
    backoff::fuzz::fail("an exception other than fault_schedule_error", e.what());
  }
  try {
    const backoff::faults::fault f = backoff::faults::parse_fault(text);
    const backoff::faults::fault again = backoff::faults::parse_fault(f.spec);
    check(again.spec == f.spec, "the canonical text is not stable", f.spec);
    backoff::faults::fault_plan plan;
    plan.faults.push_back({{}, f});
    plan.envoy_headers = true;
    check_decisions(plan, text);
  } catch (const backoff::parse_error& e) {
    check_message(e.what(), "bad fault \"");
  } catch (const std::exception& e) {
    backoff::fuzz::fail("an exception other than parse_error", e.what());
  }
  return 0;
}
