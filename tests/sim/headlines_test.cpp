// SPDX-License-Identifier: Apache-2.0
// The headline of every built-in scenario (the line its report leads with and the reports index
// shows) is the one docs/RESULTS.md writes next to its source's conclusion: a change to the
// ranking or to a model that moves a headline must say so there. Full size, seed 1, as shipped
// (`FullSize`: kept out of the sanitizer presets, label fullsize).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "report/ranking.hpp"
#include "sim/run/map.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace sim = backoff::sim;
namespace report = backoff::report;

// docs/RESULTS.md's table "| `scenario` | `headline` | the source's conclusion |": scenario ->
// headline.
// (Read here rather than through tests/support/source_doc.hpp: its namespace backoff::testing
// would hide ::testing from the other sim tests of a unity batch, which live in namespace backoff.)
std::map<std::string, std::string> documented_headlines() {
  std::map<std::string, std::string> out;
  std::ifstream file(std::string(BACKOFF_SOURCE_DIR) + "/docs/RESULTS.md");
  std::ostringstream text;
  text << file.rdbuf();
  const std::string doc = text.str();
  const std::regex row(R"(^\| `([a-z0-9-]+)` \| `([^`]+)` \|)");
  std::istringstream in(doc);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) out[m[1]] = m[2];
  }
  return out;
}

TEST(BuiltinHeadlinesFullSize, EveryBuiltInScenarioLeadsWithTheHeadlineResultsMdWrites) {
  const std::map<std::string, std::string> documented = documented_headlines();
  EXPECT_FALSE(documented.empty()) << "docs/RESULTS.md has no headline table";
  std::size_t checked = 0;
  for (const sim::scenario_source& source : sim::builtin_scenarios()) {
    sim::scenario sc = sim::scenario::load(source);
    sim::run_options o;
    o.threads = 2;
    const report::scenario_result r =
        sc.is_map() ? sim::run_map(sc, sim::builtin_scenarios(), o) : sim::run_scenario(sc, o);
    const auto it = documented.find(sc.name());
    if (it == documented.end()) {
      ADD_FAILURE() << "docs/RESULTS.md has no headline for " << sc.name() << "; it is `"
                    << report::verdict(r) << "`";
      continue;
    }
    EXPECT_EQ(report::verdict(r), it->second) << sc.name();
    ++checked;
  }
  EXPECT_EQ(checked, documented.size()) << "a headline in docs/RESULTS.md for no built-in scenario";
}

}  // namespace
