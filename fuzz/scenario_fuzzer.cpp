// SPDX-License-Identifier: Apache-2.0
// Fuzzes the scenario loader, backoff::sim::scenario::load (src/sim/scenario/, with
// toml++), and its --set overrides. The input is a scenario file's text; any NUL byte ends it, and
// each NUL-separated piece after it is one --set (`key=value`).
// Asserts: load returns or throws sim::scenario_error (nothing else: no toml::parse_error,
// parse_error, bad_alloc or length_error gets out) whose message is one line starting with the
// file's name or "--set"; a loaded scenario has a name, at least one strategy with distinct
// names (or, a metastable map, maps with a scenario, loads and a trigger range), and specs that the
// library's parsers accept; its fingerprint is 16 hex digits and the same for the same input; the
// sweep grid has the size the axes say (within the documented limits), and the scenario of its
// first and last point loads, is not a sweep, and keeps the seed. config().finish() throws
// scenario_error with a one-line message or returns.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/aimd_window.hpp"
#include "backoff/error.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "backoff/throttle.hpp"
#include "fuzz_check.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

using backoff::fuzz::check;
using backoff::sim::scenario;
using backoff::sim::scenario_error;

constexpr std::string_view file_name = "fuzz.toml";

void check_error(const scenario_error& e) {
  const std::string_view message = e.what();
  backoff::fuzz::check_message(message, message.starts_with("--set") ? "--set" : file_name);
}

void check_loaded(scenario& sc, const backoff::sim::scenario_source& source,
                  const std::vector<std::string>& sets) {
  check(!sc.name().empty(), "a scenario without a name");
  check(!sc.model().empty(), "a scenario without a model");
  // A metastable map ([[map]]) runs other scenarios' strategies and has none of its own.
  check(sc.is_map() || !sc.strategies().empty(), "a scenario without strategies or maps");
  for (const auto& m : sc.maps()) {
    check(!m.scenario.empty() && !m.strategy.empty(), "a map without a scenario or strategy");
    check(!m.loads.empty() && m.loads.size() == m.load_values.size(),
          "a map whose loads and load values differ", m.load_key);
    check(m.low < m.high && m.resolution > 0, "a map whose trigger range is empty", m.trigger_key);
    check(m.replications >= 1 && m.max_probes >= 1, "a map without runs", m.where);
  }
  std::set<std::string> names;
  for (const auto& s : sc.strategies()) {
    check(!s.name().empty() && names.insert(s.name()).second, "a strategy name empty or repeated");
    // Loading parsed and checked each spec once: the typed values read back from their text.
    try {
      check(backoff::parse_policy(s.policy().backoff.to_string()) == s.policy().backoff,
            "a loaded policy that does not read back", s.policy().backoff.to_string());
      if (s.window()) {
        check(backoff::parse_window(s.window()->to_string()) == *s.window(),
              "a loaded window that does not read back", s.window()->to_string());
      }
      if (s.budget()) {
        check(backoff::parse_budget(backoff::to_string(*s.budget())) == *s.budget(),
              "a loaded budget that does not read back", backoff::to_string(*s.budget()));
      }
      if (s.throttle()) {
        check(backoff::parse_throttle(backoff::to_string(*s.throttle())) == *s.throttle(),
              "a loaded throttle that does not read back", backoff::to_string(*s.throttle()));
      }
    } catch (const backoff::parse_error& e) {
      backoff::fuzz::fail("a loaded strategy whose canonical text does not parse", e.what());
    }
  }
  const std::string fp = sc.fingerprint();
  check(fp.size() == 16 && fp.find_first_not_of("0123456789abcdef") == std::string::npos,
        "a fingerprint that is not 16 hex digits", fp);
  check(scenario::load(source, sets).fingerprint() == fp,
        "loading twice gives another fingerprint");
  check(sc.replications() >= 1, "no replications");

  // The grid: its size is the product of the axes; walk it only when it is small.
  std::size_t total = 1;
  for (const auto& axis : sc.axes()) {
    check(!axis.values.empty(), "an empty sweep axis", axis.key);
    check(total <= 1'000'000 / axis.values.size(), "a sweep grid beyond the limit", axis.key);
    total *= axis.values.size();
  }
  if (total <= 10'000) {
    const auto points = sc.points();
    check(points.size() == total, "points() does not match the axes");
    for (const auto* p : {&points.front(), &points.back()}) {
      try {
        scenario one = sc.at(*p);
        check(!one.is_sweep(), "a sweep point is itself a sweep");
        check(one.seed() == sc.seed(), "a sweep point has another seed");
        check(one.name() == sc.name(), "a sweep point has another name");
      } catch (const scenario_error& e) {
        check_error(e);  // a swept value the scenario rejects (e.g. a bad strategy key)
      }
    }
  }
  try {
    sc.config().finish();
  } catch (const scenario_error& e) {
    check_error(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  backoff::sim::scenario_source source{std::string(file_name), std::string(input.substr(0, nul))};
  std::vector<std::string> sets;
  if (nul != std::string_view::npos) {
    std::string_view rest = input.substr(nul + 1);
    while (sets.size() < 8) {
      const std::size_t end = rest.find('\0');
      sets.emplace_back(rest.substr(0, end));
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
  }
  try {
    scenario sc = scenario::load(source, sets);
    check_loaded(sc, source, sets);
  } catch (const scenario_error& e) {
    check_error(e);
  } catch (const std::exception& e) {
    backoff::fuzz::fail("an exception other than scenario_error", e.what());
  }
  return 0;
}
