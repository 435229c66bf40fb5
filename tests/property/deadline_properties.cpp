// SPDX-License-Identifier: Apache-2.0
// Properties of the deadline spec in the sync loop (deadline.hpp, retry.hpp) over arbitrary
// presets, deadlines, per-attempt timeouts, minimum useful times and attempt durations: no
// attempt starts after the deadline or with less than the minimum useful time left, and each
// attempt is given min(per_attempt, time left), the per-attempt timeout at the deadline itself.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "backoff/deadline.hpp"
#include "backoff/presets.hpp"
#include "backoff/retry.hpp"
#include "recording_env.hpp"

namespace {

using backoff::duration;
using namespace std::chrono_literals;

constexpr std::int64_t ms = 1'000'000;

duration between_ms(std::int64_t lo, std::int64_t hi) {
  return duration{*rc::gen::inRange<std::int64_t>(lo * ms, hi * ms + 1)};
}

RC_GTEST_PROP(DeadlineProperties, NoAttemptStartsAfterTheDeadlineOrWithTooLittleTimeLeft, ()) {
  const auto all = backoff::presets();
  const auto& preset = all[*rc::gen::inRange<std::size_t>(0, all.size())];
  backoff::deadline_config d;
  d.total = between_ms(1, 60'000);
  d.per_attempt = *rc::gen::element(duration{0}, between_ms(1, 10'000));
  d.min_useful = *rc::gen::element(
      duration{0}, duration{*rc::gen::inRange<std::int64_t>(0, d.total.count() + 1)});
  d.validate();
  backoff::retry_options options{.policy = {.backoff = preset.policy, .max_attempts = 0}};
  d.apply(options);
  const duration attempt_takes = 1ms + between_ms(0, 5'000);
  RC_LOG() << preset.name << " " << d.to_string() << " attempts take "
           << backoff::format_duration(attempt_takes) << '\n';

  backoff::testing::recording_env rec{*rc::gen::arbitrary<std::uint64_t>()};
  struct start {
    duration at, timeout;
  };
  std::vector<start> starts;
  const auto result = backoff::retry(
      [&](const backoff::attempt_context& c) {
        starts.push_back({rec.clock.now().time_since_epoch(), c.timeout});
        rec.clock.advance(attempt_takes);
        return false;
      },
      options, rec.env);

  RC_ASSERT(!starts.empty() || d.min_useful == d.total);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const start& s = starts[i];
    RC_ASSERT(s.at <= d.total);
    const duration left = d.total - s.at;
    if (d.min_useful.count() > 0) RC_ASSERT(left >= d.min_useful);
    if (d.per_attempt.count() == 0) {
      RC_ASSERT(s.timeout == duration{0});
    } else if (s.at == d.total && i > 0) {
      RC_ASSERT(s.timeout == d.per_attempt);  // the last attempt, made at the deadline
    } else {
      RC_ASSERT(s.timeout == std::max(std::min(d.per_attempt, left), duration{1}));
    }
  }
  RC_CLASSIFY(starts.size() > 5, "more than 5 attempts");
  RC_CLASSIFY(d.min_useful.count() > 0, "a minimum useful time");
  RC_ASSERT(result.attempts == starts.size());
  RC_ASSERT(result.why == backoff::outcome::deadline_exceeded);
}

}  // namespace
