// SPDX-License-Identifier: Apache-2.0
// Runs a system scenario written in a test (model = "system", docs/SYSTEMS.md) and reads what it
// reports: the whole result, the one line a bad file gets, or one field of a strategy.
//
//   const auto r = backoff::test::system_run(text, {"run.duration=\"10s\""});
//   EXPECT_EQ(backoff::test::system_field(r.strategies.at(0), "services.db.attempts"), 9.0);
//   EXPECT_NE(backoff::test::system_error(bad).find("tick"), std::string::npos);
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace backoff::test {

inline report::scenario_result system_run(const std::string& text,
                                          const std::vector<std::string>& sets = {},
                                          const std::string& path = "mine.toml") {
  sim::scenario sc = sim::scenario::load({path, text}, sets);
  return sim::run_scenario(sc, {});
}

// The message a scenario that must not load or run gives, or "(no error)".
inline std::string system_error(const std::string& text,
                                const std::vector<std::string>& sets = {}) {
  try {
    system_run(text, sets);
  } catch (const sim::scenario_error& e) {
    return e.what();
  }
  return "(no error)";
}

inline double system_field(const report::strategy_summary& s, const std::string& name) {
  for (const auto& f : s.fields) {
    if (f.name == name) {
      EXPECT_TRUE(f.value.has_value()) << name;
      return f.value.value_or(std::nan(""));
    }
  }
  ADD_FAILURE() << s.name << ": no field " << name;
  return std::nan("");
}

// `text` with the first `from` replaced by `to` (a test failure when there is none).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

}  // namespace backoff::test
