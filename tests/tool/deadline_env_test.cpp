// SPDX-License-Identifier: Apache-2.0
// The deadline contract between nested retry runs (tool/deadline_env.hpp): honoured while the run
// that set it lives, or when set by hand; ignored, with a note, when its owner has ended or the
// value is not a time.
#include "tool/deadline_env.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "tool/process.hpp"

namespace {

using namespace backoff::tool;
using namespace std::chrono_literals;

std::string in_a_minute() {
  return std::to_string(static_cast<long long>(unix_now_s()) + 60);
}

TEST(DeadlineEnv, AbsentIsNoDeadlineAndNoNote) {
  const auto r = read_inherited_deadline(nullptr, nullptr);
  EXPECT_FALSE(r.deadline.has_value());
  EXPECT_TRUE(r.note.empty());
}

TEST(DeadlineEnv, ADeadlineSetByHandIsHonoured) {
  const auto r = read_inherited_deadline(in_a_minute().c_str(), nullptr);
  ASSERT_TRUE(r.deadline.has_value());
  EXPECT_GT(*r.deadline, steady_now() + 50s);
  EXPECT_TRUE(r.note.empty());
}

TEST(DeadlineEnv, ALivingOwnersDeadlineIsHonoured) {
  const std::string me = process_identity(static_cast<long>(::getpid()));
  ASSERT_FALSE(me.empty());
  EXPECT_TRUE(read_inherited_deadline(in_a_minute().c_str(), me.c_str()).deadline.has_value());
}

// A daemon started by an attempt outlives the run: the deadline ended with it.
TEST(DeadlineEnv, AnEndedOwnersDeadlineIsIgnoredWithANote) {
  const std::string pid = std::to_string(::getpid());
  for (const std::string& owner : {pid + ":0", std::string("999999999:5"), std::string("x")}) {
    const auto r = read_inherited_deadline("0", owner.c_str());
    EXPECT_FALSE(r.deadline.has_value()) << owner;
    EXPECT_NE(r.note.find("BACKOFF_DEADLINE ignored: the backoff run that set it"),
              std::string::npos)
        << r.note;
  }
}

TEST(DeadlineEnv, NotATimeIsIgnoredWithANote) {
  const auto r = read_inherited_deadline("soon", nullptr);
  EXPECT_FALSE(r.deadline.has_value());
  EXPECT_EQ(r.note, "BACKOFF_DEADLINE='soon' ignored: not a time in Unix seconds");
}

TEST(DeadlineEnv, ExportSetsTheDeadlineAndThisProcessAsOwnerOrRemovesBoth) {
  std::vector<std::string> env{"PATH=/bin", "BACKOFF_DEADLINE=1", "BACKOFF_DEADLINE_OWNER=1:1"};
  export_deadline(env, steady_now() + 30s);
  const std::string owner = "BACKOFF_DEADLINE_OWNER=" + process_identity(::getpid());
  EXPECT_NE(std::find(env.begin(), env.end(), owner), env.end());
  const auto deadline = std::find_if(env.begin(), env.end(), [](const std::string& v) {
    return v.rfind("BACKOFF_DEADLINE=", 0) == 0;
  });
  ASSERT_NE(deadline, env.end());
  const auto at = std::stoll(deadline->substr(17));
  EXPECT_NEAR(static_cast<double>(at), unix_now_s() + 30, 2);
  export_deadline(env, std::nullopt);
  EXPECT_EQ(env, std::vector<std::string>{"PATH=/bin"});
}

}  // namespace
