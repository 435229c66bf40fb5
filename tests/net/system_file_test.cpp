// SPDX-License-Identifier: Apache-2.0
// The system files' reader (src/systems) without the simulator: what a real tier reads of a
// `model = "system"` file is what the simulator reads, through the same code (SPEC 8.3).
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <memory>
#include <string>
#include <vector>

#include "backoff/random.hpp"
#include "backoff/strategy.hpp"
#include "config/config_reader.hpp"
#include "systems/system_spec.hpp"

namespace system_file_test {

using backoff::config::config_error;
using backoff::config::config_reader;
namespace systems = backoff::systems;

config_reader reader_of(const std::string& text) {
  auto root = std::make_shared<toml::table>(toml::parse(text, std::string_view{"tier.toml"}));
  return config_reader{root, "tier.toml", {}};
}

const std::string file = R"toml([run]
duration = "10s"
[service.api]
replicas = 2
workers = 4
queue = 16
discipline = "codel(target=5ms, interval=100ms)"
service_time = "constant(value=3ms)"
max_connections = 100
limit = "concurrency(max=12)"
errors = { rate = 0.1, status = 503, fade = "2s" }
calls = [{ to = "db", edge = "db" }]
[service.db]
workers = 2
service_time = { kind = "exponential", mean = "2ms" }
faults = [{ at = "1s", for = "2s", fault = "capacity(share=50%)" }]
[[clients]]
to = "api"
arrivals = "poisson(rate=100)"
edge = "client"
[edge.client]
max_attempts = 1
[edge.db]
policy = "constant(initial=10ms)"
max_attempts = 3
on_give_up = "do-not-retry"
)toml";

TEST(SystemFile, ATierReadsItsServiceAsTheSimulatorDoes) {
  config_reader keys = reader_of(file);
  const systems::system_spec spec = systems::read_system(keys);
  keys.finish();
  ASSERT_EQ(spec.services.size(), 2u);
  const systems::service_spec& api = spec.services[0];
  EXPECT_EQ(api.name, "api");
  EXPECT_EQ(api.replicas, 2u);
  EXPECT_EQ(api.workers, 4u);
  EXPECT_EQ(api.queue, 16u);
  EXPECT_EQ(api.max_connections, 100u);
  EXPECT_EQ(api.discipline.kind, systems::discipline_kind::codel);
  EXPECT_EQ(api.admission, systems::admission_kind::concurrency);
  EXPECT_EQ(api.concurrency, 12u);
  ASSERT_EQ(api.faults.faults.size(), 1u);
  EXPECT_EQ(api.faults.faults[0].what.spec, "errors(status=503, fade=2s, rate=10%)");
  ASSERT_EQ(api.calls.size(), 1u);
  EXPECT_EQ(spec.services[api.calls[0].to].name, "db");
  backoff::random_generator rng{1};
  EXPECT_EQ(api.service_time.sample(rng, 1), 3'000'000);
  EXPECT_EQ(spec.services[1].capacity_returns, std::vector<systems::time_ns>{3'000'000'000});
  const auto db = spec.edge_index("db");
  ASSERT_TRUE(db.has_value());
  EXPECT_TRUE(spec.edges[*db].options.do_not_retry_on_give_up);
}

TEST(SystemFile, AStrategyIsResolvedOverTheEdgesWithoutTheSimulator) {
  config_reader keys = reader_of(file);
  systems::system_spec spec = systems::read_system(keys);
  const backoff::strategy top;  // a system sets its guards per edge, none at the top
  const std::vector<systems::edge_setting> sets{
      {"db", "max_attempts", "1", "tier.toml:40:1"},
      {"db", "on_give_up", "retryable", "tier.toml:41:1"}};
  spec.resolve(std::vector<systems::strategy_edges>{{"top-only", "tier.toml:39:1", &top, &sets}});
  const auto db = *spec.edge_index("db");
  EXPECT_EQ(spec.edge_guards.at(0).at(db).max_attempts, 1u);
  EXPECT_FALSE(spec.edge_options_of.at(0).at(db).do_not_retry_on_give_up);
  const std::vector<systems::edge_setting> bad{{"dbb", "max_attempts", "1", "tier.toml:40:1"}};
  try {
    spec.resolve(std::vector<systems::strategy_edges>{{"typo", "tier.toml:39:1", &top, &bad}});
    ADD_FAILURE() << "an unknown edge was taken";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("tier.toml:40:1: strategy typo: no [edge.dbb]"),
              std::string::npos)
        << e.what();
  }
}

TEST(SystemFile, AMistakeIsOneLineWithItsPlace) {
  std::string bad = file;
  bad.replace(bad.find("queue = 16"), 10, "queue = -1");
  config_reader keys = reader_of(bad);
  try {
    systems::read_system(keys);
    ADD_FAILURE() << "a negative queue was taken";
  } catch (const config_error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.starts_with("tier.toml:6:9: service.api.queue")) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

}  // namespace system_file_test
