// SPDX-License-Identifier: Apache-2.0
// Seed 000's figure (Thain and Livny, HPDC 2003): jobs submitted in 5 minutes vs clients, for a
// fixed retry, Aloha and Ethernet (docs/models/ethernet-clients.md). The bounds are the issue's
// shape with wide margins, not the model's own numbers; the model is not tuned to them.
//
// Scale: the full-size model (7500 descriptors, a 5-minute window) at a few client counts (25, 50,
// 200, 450); the whole 20-point sweep takes about 50 ms in a release build, so nothing needs to
// be scaled down, and the shape is the full-scale one.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/models/model.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/strategy.hpp"

namespace {

namespace sim = backoff::sim;
namespace report = backoff::report;

// The built-in scenario without its [sweep] table: one point, chosen with --set clients=N.
sim::scenario_source one_point_source() {
  for (const auto& source : sim::builtin_scenarios()) {
    if (source.path != "builtin/ethernet-clients.toml") continue;
    std::string text = source.text;
    const auto at = text.find("\n[sweep]");
    if (at != std::string::npos) {
      const auto next = text.find("\n[", at + 1);
      text.erase(at, next == std::string::npos ? std::string::npos : next - at);
    }
    return {source.path, text};
  }
  throw std::runtime_error("no built-in scenario ethernet-clients");
}

struct strategy_run {
  report::strategy_summary summary;
  std::uint64_t deferred = 0;  // carrier-sense deferrals: controller attempts - real attempts
};

// Runs every strategy at one point, keeping clients.csv to count the deferrals.
std::map<std::string, strategy_run> run_point(std::vector<std::string> sets,
                                              std::uint64_t seed = 1) {
  sim::scenario sc = sim::scenario::load(one_point_source(), sets);
  sim::config_reader& keys = sc.config();
  const auto* factory = sim::find_model(sc.model());
  if (factory == nullptr) throw std::runtime_error("model not registered");
  auto model = (*factory)(keys);
  keys.finish();
  const std::vector<sim::client_strategy>& strategies = sc.strategies();
  model->check_all(strategies);
  std::map<std::string, strategy_run> out;
  for (const auto& strategy : strategies) {
    const auto& spec = strategy;
    report::recorder_options options;
    options.strategy = spec.name();
    options.bucket = model->bucket();
    std::ostringstream csv;
    report::recorder rec(options, &csv);
    sim::engine e;
    const auto info = model->run(strategy, seed, e, rec, [](double) {});
    strategy_run r;
    r.summary = rec.finish(info.end, info.events);
    // Rows: strategy,id,first_attempt_s,done_s,attempts,latency_s,status
    std::istringstream rows(csv.str());
    std::string row;
    std::uint64_t controller_attempts = 0;
    while (std::getline(rows, row)) {
      std::size_t pos = 0;
      for (int field = 0; field < 4; ++field) pos = row.find(',', pos) + 1;
      controller_attempts += std::stoull(row.substr(pos, row.find(',', pos) - pos));
    }
    r.deferred = controller_attempts - r.summary.attempts;
    out[spec.name()] = r;
  }
  return out;
}

std::map<std::string, strategy_run> at_clients(int clients) {
  return run_point({"clients=" + std::to_string(clients)});
}

class EthernetClients : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    points_ = new std::map<int, std::map<std::string, strategy_run>>();
    for (const int n : {50, 200, 450}) (*points_)[n] = at_clients(n);
  }
  static void TearDownTestSuite() { delete points_; }
  static std::uint64_t jobs(int clients, const std::string& strategy) {
    return points_->at(clients).at(strategy).summary.completed;
  }
  static std::map<int, std::map<std::string, strategy_run>>* points_;
};
std::map<int, std::map<std::string, strategy_run>>* EthernetClients::points_ = nullptr;

TEST_F(EthernetClients, AllThreeSubmitAlikeUpToTwoHundredClients) {
  for (const int n : {50, 200}) {
    const double fixed = static_cast<double>(jobs(n, "fixed"));
    EXPECT_GT(fixed, 0.0);
    for (const char* s : {"aloha", "ethernet"}) {
      EXPECT_NEAR(static_cast<double>(jobs(n, s)), fixed, 0.05 * fixed) << s << " at " << n;
    }
  }
}

TEST_F(EthernetClients, ThroughputGrowsWithClientsWhileThePoolLasts) {
  for (const char* s : {"fixed", "aloha", "ethernet"}) {
    EXPECT_GT(jobs(200, s), 3 * jobs(50, s)) << s;
  }
}

TEST_F(EthernetClients, FixedRetryFallsToNearZeroPastThePool) {
  EXPECT_LT(jobs(450, "fixed"), jobs(200, "fixed") / 20);
}

TEST_F(EthernetClients, EthernetKeepsAtLeastHalfOfItsPeak) {
  const auto peak = std::max({jobs(50, "ethernet"), jobs(200, "ethernet"), jobs(450, "ethernet")});
  EXPECT_GE(jobs(450, "ethernet"), peak / 2);
}

TEST_F(EthernetClients, AlohaFallsBetweenFixedAndEthernetUnderOverload) {
  EXPECT_GT(jobs(450, "aloha"), jobs(450, "fixed") + jobs(200, "aloha") / 10);
  EXPECT_LT(jobs(450, "aloha"), jobs(450, "ethernet") * 3 / 4);
}

TEST_F(EthernetClients, CarrierSenseDefersOnlyUnderOverload) {
  EXPECT_GT(points_->at(450).at("ethernet").deferred, 100u);
  EXPECT_EQ(points_->at(50).at("ethernet").deferred, 0u);
  EXPECT_EQ(points_->at(200).at("ethernet").deferred, 0u);
  for (const int n : {50, 200, 450}) {
    for (const char* s : {"fixed", "aloha"}) {
      EXPECT_EQ(points_->at(n).at(s).deferred, 0u) << s << " does not sense, at " << n;
    }
  }
}

TEST_F(EthernetClients, EthernetNeverJamsTheScheduler) {
  // Every submission a sensing client sends finds room: no errors at all, while Aloha's
  // excluded clients keep failing.
  const auto errors = [](const report::strategy_summary& s) {
    std::uint64_t n = 0;
    for (const auto& b : s.buckets) n += b.errors;
    return n;
  };
  EXPECT_EQ(errors(points_->at(450).at("ethernet").summary), 0u);
  EXPECT_GT(errors(points_->at(450).at("aloha").summary), 0u);
}

TEST(EthernetClientsCalibration, TwentyFiveClientsSubmitAboutEightHundredJobsInFiveMinutes) {
  double total = 0;
  const int seeds = 6;
  for (int seed = 1; seed <= seeds; ++seed) {
    total += static_cast<double>(
        run_point({"clients=25"}, static_cast<std::uint64_t>(seed)).at("fixed").summary.completed);
  }
  EXPECT_NEAR(total / seeds, 800.0, 40.0);
}

TEST(EthernetClientsRuns, AreIdenticalForTheSameSeed) {
  const auto numbers = [](std::uint64_t seed) {
    std::ostringstream out;
    for (const auto& [name, r] : run_point({"clients=400"}, seed)) {
      out << name << ' ' << r.summary.completed << ' ' << r.summary.attempts << ' ' << r.deferred
          << ' ' << (r.summary.latency_s ? std::to_string(r.summary.latency_s->p99) : "-") << ' '
          << r.summary.mean_load << '\n';
    }
    return out.str();
  };
  const std::string a = numbers(7);
  EXPECT_EQ(a, numbers(7));
  EXPECT_NE(a, numbers(8));
}

TEST(EthernetClientsKeys, ABadValueIsOneLineNamingTheKey) {
  const auto message = [](const std::string& set) -> std::string {
    try {
      run_point({"clients=25", set});
    } catch (const sim::scenario_error& e) {
      return e.what();
    }
    return "";
  };
  const std::string zero = message("server.descriptors_per_submission=0");
  EXPECT_NE(zero.find("server.descriptors_per_submission"), std::string::npos) << zero;
  EXPECT_EQ(zero.find('\n'), std::string::npos) << zero;
  const std::string too_many = message("server.descriptors_per_submission=8000");
  EXPECT_NE(too_many.find("more than server.descriptors"), std::string::npos) << too_many;
  EXPECT_EQ(too_many.find('\n'), std::string::npos) << too_many;
}

TEST(EthernetClientsKeys, CarrierSenseWithoutABackoffIsRejected) {
  // `fixed` retries at once: sensing with it would defer forever at one instant.
  try {
    run_point({"clients=25", "carrier_sense.strategies=[\"ethernet\", \"fixed\"]"});
    ADD_FAILURE() << "expected a scenario_error";
  } catch (const sim::scenario_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("fixed"), std::string::npos) << m;
    EXPECT_NE(m.find("carrier sense"), std::string::npos) << m;
  }
}

}  // namespace

namespace {

TEST(EthernetClientsKeys, ASensingStrategyThatDoesNotExistIsRejected) {
  try {
    run_point({"clients=25", "carrier_sense.strategies=[\"ethernt\"]"});
    ADD_FAILURE() << "expected a scenario_error";
  } catch (const sim::scenario_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--set carrier_sense.strategies"), std::string::npos) << m;
    EXPECT_NE(m.find("no strategy named 'ethernt'"), std::string::npos) << m;
  }
}

}  // namespace
