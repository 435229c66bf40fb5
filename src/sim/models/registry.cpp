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

std::vector<std::string_view> model_names() {
  std::vector<std::string_view> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

}  // namespace backoff::sim
