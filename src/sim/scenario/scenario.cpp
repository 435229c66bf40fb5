// SPDX-License-Identifier: Apache-2.0
// A scenario as a whole (scenario.hpp): the file parsed and its overrides applied, the keys every
// scenario has, and the points of its sweep. The parts have files of their own: the key reader
// and overrides (src/config: config_reader.cpp, overrides.cpp), [[strategy]] (strategies.cpp),
// [sweep] (sweep.cpp) and [[map]] (maps.cpp).
#include "scenario.hpp"

#include <toml++/toml.h>

#include <cstdio>
#include <limits>

#include "config/overrides.hpp"
#include "config/toml_shape.hpp"
#include "config/toml_text.hpp"

namespace backoff::sim {

using config::apply_override;
using config::position;
using config::set_labels;

namespace {

// The keys every scenario has after its name and model.
std::uint64_t read_seed(config_reader& r) {
  return static_cast<std::uint64_t>(
      r.integer("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
}

scenario_about read_about(config_reader& r) {
  scenario_about about;
  about.description = r.string("about.description", "");
  about.source = r.string("about.source", "");
  about.claim = r.string("about.claim", "");
  return about;
}

}  // namespace

scenario scenario::load(const scenario_source& source, const std::vector<std::string>& sets) {
  if (auto problem = config::toml_shape_problem(source.text, [&](int line, int column) {
        return source.path + ":" + std::to_string(line) + ":" + std::to_string(column);
      })) {
    throw scenario_error(*problem);
  }
  auto root = std::make_shared<toml::table>();
  try {
    *root = toml::parse(source.text, source.path);
  } catch (const toml::parse_error& e) {
    std::string message(e.description());
    throw scenario_error(position(e.source(), source.path) + ": " + message);
  }
  auto overridden = set_labels(sets);
  for (const auto& s : sets) {
    // A knob's key paths are named in messages by the --set that reached them.
    const std::string label = "--set " + s.substr(0, s.find('='));
    for (const std::string& key : apply_override(*root, s)) overridden[key] = label;
  }
  // What every point starts from, kept before the reader marks anything: the tree without its
  // [sweep] table, so that a point neither parses the file again nor expands the axes again
  // (which made checking a sweep quadratic in its number of points).
  std::shared_ptr<const toml::table> base;
  if (root->contains("sweep") || root->contains("replications")) {
    auto copy = std::make_shared<toml::table>(*root);
    copy->erase("sweep");
    base = std::move(copy);
  }
  scenario sc = load(source, sets, std::move(root), std::move(overridden), nullptr);
  sc.base_ = std::move(base);
  return sc;
}

scenario scenario::load(const scenario_source& source, const std::vector<std::string>& sets,
                        std::shared_ptr<toml::table> root,
                        std::map<std::string, std::string, std::less<>> overridden,
                        const scenario* point_of) {
  scenario sc{config_reader(root, source.path, std::move(overridden))};
  sc.source_ = source;
  sc.sets_ = sets;
  config_reader& r = sc.config_;
  if (point_of == nullptr && root->contains("map")) {
    // A metastable map: its own keys only, every one read here (no model reads the rest).
    r.consume("map");
    sc.read_maps(*root);
    for (const char* key : {"sweep", "strategy"}) {
      if (root->contains(key)) {
        r.fail(key, std::string("a metastable map ([[map]]) has no ") + key +
                        " of its own: each [[map]] names its loads and the mapped scenario's "
                        "strategy");
      }
    }
    // A top-level `replications` (e.g. --set replications=1 given to the whole suite) sets the
    // runs per probe of every map.
    if (r.has("replications")) {
      const auto n = static_cast<std::uint32_t>(r.integer("replications", 1, 1, 1000));
      for (map_spec& m : sc.maps_) m.replications = n;
    }
    sc.name_ = r.string("scenario", "");
    if (sc.name_.empty()) r.fail("scenario", "missing: every scenario needs a name");
    sc.model_ = r.string("model", "metastable-map");
    if (sc.model_ != "metastable-map") {
      r.fail("model",
             "a scenario with [[map]] tables is a metastable map: leave `model` out or "
             "set it to \"metastable-map\"");
    }
    sc.seed_ = read_seed(r);
    sc.about_ = read_about(r);
    r.finish();
    return sc;
  }
  if (point_of != nullptr) {
    r.consume("replications");  // checked by the sweep; a point is one run
  } else {
    sc.read_sweep(*root);
  }
  sc.name_ = r.string("scenario", "");
  if (sc.name_.empty()) r.fail("scenario", "missing: every scenario needs a name");
  sc.model_ = r.string("model", sc.name_);
  if (sc.model_.empty()) {
    r.fail("model", "empty: name a model, or leave the key out to use the scenario's name");
  }
  sc.seed_ = read_seed(r);
  sc.about_ = read_about(r);

  r.consume("strategy");
  // [knobs]: short names that --set and [sweep] expand into key paths (overrides.hpp). Each
  // path must be a key of the file, so that a knob sets a value the file already has.
  r.consume("knobs");
  if (const toml::table* knobs = root->get_as<toml::table>("knobs")) {
    for (const auto& [name, targets] : *knobs) {
      std::vector<std::string> paths;
      if (const auto one = targets.value_exact<std::string>()) paths.push_back(*one);
      if (const toml::array* list = targets.as_array()) {
        for (const toml::node& item : *list) {
          if (const auto path = item.value_exact<std::string>()) paths.push_back(*path);
        }
      }
      for (const std::string& path : paths) {
        if (!r.has(path) || r.is_table(path)) {
          throw scenario_error(position(targets.source(), source.path) + ": knobs." +
                               std::string(name.str()) + ": '" + path +
                               "' is not a value of this file (a spec string's numbers are "
                               "reached through its table form, { kind = \"...\", ... })");
        }
      }
    }
  }
  if (point_of != nullptr) {
    sc.strategies_ = point_of->strategies_;
  } else {
    sc.read_strategies(*root);
  }
  return sc;
}

std::string scenario::fingerprint() const {
  // FNV-1a, 64 bits: stable across platforms and runs, unlike std::hash.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto mix = [&](std::string_view bytes) {
    for (const char c : bytes) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ULL;
    }
    h ^= 0xff;  // a separator no text can fake
    h *= 0x100000001b3ULL;
  };
  mix(source_.text);
  for (const auto& s : sets_) mix(s);
  mix(std::to_string(seed_));
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::size_t scenario::point_count() const {
  std::size_t total = 1;
  for (const auto& a : axes_) total *= a.values.size();
  return total;
}

sweep_point scenario::point(std::size_t index) const {
  sweep_point p;
  p.index = index;
  std::size_t rest = index;
  p.params.resize(axes_.size());
  for (std::size_t k = axes_.size(); k-- > 0;) {  // the last axis varies fastest
    const auto n = axes_[k].values.size();
    p.params[k] = {&axes_[k], &axes_[k].values[rest % n]};
    rest /= n;
  }
  return p;
}

std::vector<sweep_point> scenario::points() const {
  std::vector<sweep_point> out;
  const std::size_t total = point_count();
  out.reserve(total);
  for (std::size_t i = 0; i < total; ++i) out.push_back(point(i));
  return out;
}

scenario scenario::at(const sweep_point& point) const {
  auto root = base_ ? std::make_shared<toml::table>(*base_) : std::make_shared<toml::table>();
  auto overridden = set_labels(sets_);
  // A sweep point's values: named in messages by the sweep entry that set them.
  for (const auto& [axis, value] : point.params) {
    for (const std::string& key : apply_override(*root, axis->key + "=" + value->toml)) {
      overridden[key] = axis->where + " (sweep " + axis->key + "=" + value->text + ")";
    }
  }
  scenario sc = load(source_, sets_, std::move(root), std::move(overridden), this);
  sc.seed_ = seed_;
  return sc;
}

}  // namespace backoff::sim
