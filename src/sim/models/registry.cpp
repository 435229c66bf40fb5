// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include "model.hpp"

namespace backoff::sim {
namespace {

std::map<std::string, model_factory, std::less<>>& registry() {
  static std::map<std::string, model_factory, std::less<>> models;
  return models;
}

}  // namespace

model_registration::model_registration(std::string_view name, model_factory factory) {
  registry().emplace(std::string(name), std::move(factory));
}

const model_factory* find_model(std::string_view name) {
  const auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

namespace {

void refuse_unsupported_guards(const model_runner& model, const scenario& sc) {
  const guard_support can = model.guards();
  for (const client_strategy& s : sc.strategies()) {
    if (!s.edge_settings().empty() && !model.takes_edge_settings()) {
      const edge_setting& e = s.edge_settings().front();
      throw scenario_error(e.where + ": strategy " + s.name() + ": edge." + e.edge + "." + e.key +
                           ": model '" + sc.model() +
                           "' has no edges; only a system scenario (model = \"system\") does");
    }
    if (const auto refused = s.guards().refusal(can)) {
      throw scenario_error(s.where() + ": strategy " + s.name() + ": model '" + sc.model() +
                           "' cannot honour strategy." + std::string(refused->key) + ": " +
                           refused->why + " (docs/SIMULATOR.md, \"Guards\")");
    }
  }
}

}  // namespace

std::unique_ptr<model_runner> make_model(scenario& sc) {
  const model_factory* factory = find_model(sc.model());
  if (factory == nullptr) {
    std::string known;
    for (auto name : model_names()) known += (known.empty() ? "" : ", ") + std::string(name);
    sc.config().fail("model", "unknown model '" + sc.model() + "' (known: " + known + ")");
  }
  std::unique_ptr<model_runner> model = (*factory)(sc.config());
  model->set_max_events_per_instant(static_cast<std::uint64_t>(sc.config().integer(
      "run.max_events_per_instant", default_max_events_per_instant(model->memory()), 1,
      std::numeric_limits<std::int64_t>::max())));
  sc.config().finish();
  refuse_unsupported_guards(*model, sc);
  model->check_all(sc.strategies());
  return model;
}

std::int64_t default_max_events_per_instant(const memory_need& need) {
  constexpr std::int64_t floor = 10'000'000;
  constexpr std::int64_t per_entity = 100;
  if (need.state_count > std::numeric_limits<std::int64_t>::max() / per_entity) {
    return std::numeric_limits<std::int64_t>::max();
  }
  return std::max(floor, per_entity * need.state_count);
}

std::vector<std::string_view> model_names() {
  std::vector<std::string_view> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

}  // namespace backoff::sim
