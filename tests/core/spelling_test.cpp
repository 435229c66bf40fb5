// SPDX-License-Identifier: Apache-2.0
// The did-you-mean that every reader (spec keys, scenario keys, subcommands, flags) shares.
#include "backoff/spelling.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string_view>

namespace {

TEST(Spelling, EditDistanceCountsASwapOfNeighboursAsOneEdit) {
  EXPECT_EQ(backoff::edit_distance("try", "try"), 0U);
  EXPECT_EQ(backoff::edit_distance("tyr", "try"), 1U);
  EXPECT_EQ(backoff::edit_distance("facotr", "factor"), 1U);
  EXPECT_EQ(backoff::edit_distance("", "abc"), 3U);
  EXPECT_EQ(backoff::edit_distance("abc", ""), 3U);
  EXPECT_EQ(backoff::edit_distance("kitten", "sitting"), 3U);
  EXPECT_EQ(backoff::edit_distance("ca", "abc"), 3U);  // optimal string alignment, not Damerau
}

TEST(Spelling, SuggestsTheClosestNameOnlyWhenItIsClose) {
  constexpr std::array<std::string_view, 4> keys{"initial", "factor", "max", "jitter"};
  EXPECT_EQ(backoff::closest_name("facotr", keys), "factor");
  EXPECT_EQ(backoff::closest_name("jiter", keys), "jitter");
  EXPECT_EQ(backoff::closest_name("x", keys), "");  // one letter is not a guess at "max"
  EXPECT_EQ(backoff::closest_name("completely", keys), "");
  EXPECT_EQ(backoff::did_you_mean("inital", keys), " (did you mean 'initial'?)");
  EXPECT_EQ(backoff::did_you_mean("zzz", {"max", "min"}), "");
}

}  // namespace
