// SPDX-License-Identifier: Apache-2.0
// delay_stream (policy.hpp): one run's delays drawn one at a time are for_each_delay's draws, and
// runs advanced together (the `backoff delays` table) do not disturb one another.
#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "backoff/policy.hpp"
#include "backoff/presets.hpp"
#include "backoff/random.hpp"

namespace {

using backoff::backoff_policy;
using backoff::delay_stream;
using backoff::duration;

std::vector<duration> whole_run(const backoff_policy& policy, std::uint64_t seed, int count) {
  std::vector<duration> delays;
  backoff::for_each_delay(policy, seed, count, [&](duration d) { delays.push_back(d); });
  return delays;
}

// Every preset covers every jitter kind that draws (and decorrelated, whose draw depends on the
// previous delay), so a stream that drew or remembered differently would show here.
TEST(DelayStream, GivesForEachDelaysDrawsForEveryPreset) {
  for (const auto& preset : backoff::presets()) {
    const auto expected = whole_run(preset.policy, 42, 50);
    delay_stream run{preset.policy, 42};
    for (std::size_t n = 0; n < expected.size(); ++n) {
      ASSERT_EQ(run.next(), expected[n]) << preset.name << ", delay " << n + 1;
    }
  }
}

TEST(DelayStream, RunsAdvancedInLockstepAreEachTheirOwnRun) {
  const backoff_policy& policy = backoff::find_preset("aws-decorrelated")->policy;
  constexpr int runs = 5;
  constexpr int count = 40;
  std::vector<delay_stream> streams;
  for (int r = 0; r < runs; ++r) streams.emplace_back(policy, backoff::derive_seed(7, r));
  std::vector<std::vector<duration>> drawn(runs);
  for (int n = 0; n < count; ++n) {
    for (int r = 0; r < runs; ++r) drawn[r].push_back(streams[r].next());
  }
  for (int r = 0; r < runs; ++r) {
    EXPECT_EQ(drawn[r], whole_run(policy, backoff::derive_seed(7, r), count)) << "run " << r;
  }
  EXPECT_NE(drawn[0], drawn[1]);
}

TEST(DelayStream, ACopyContinuesTheRunOnItsOwn) {
  const backoff_policy& policy = backoff::find_preset("aws-full")->policy;
  delay_stream run{policy, 3};
  for (int n = 0; n < 5; ++n) run.next();
  delay_stream copy = run;
  for (int n = 0; n < 20; ++n) ASSERT_EQ(copy.next(), run.next()) << n;
}

// The table keeps one per run (up to 100,000 runs): it must stay a small value.
static_assert(sizeof(delay_stream) <= 80);
static_assert(std::is_nothrow_copy_constructible_v<delay_stream>);
// A temporary policy would leave the stream pointing at a destroyed object.
static_assert(!std::is_constructible_v<delay_stream, backoff_policy&&, std::uint64_t>);
static_assert(std::is_constructible_v<delay_stream, const backoff_policy&, std::uint64_t>);

}  // namespace
