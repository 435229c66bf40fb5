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

std::unique_ptr<model_runner> make_model(scenario& sc) {
  const model_factory* factory = find_model(sc.model());
  if (factory == nullptr) {
    std::string known;
    for (auto name : model_names()) known += (known.empty() ? "" : ", ") + std::string(name);
    sc.config().fail("model", "unknown model '" + sc.model() + "' (known: " + known + ")");
  }
  std::unique_ptr<model_runner> model = (*factory)(sc.config());
  sc.config().finish();
  model->check_all(sc.strategies());
  return model;
}

std::vector<std::string_view> model_names() {
  std::vector<std::string_view> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

}  // namespace backoff::sim
