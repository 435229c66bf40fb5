// SPDX-License-Identifier: Apache-2.0
// `backoff presets`: every named policy side by side, one column per preset, one row per retry,
// followed by each preset's formula, source and canonical spec.
#include "backoff/presets.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "output.hpp"
#include "report/summary.hpp"
#include "report/text_table.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace {

struct presets_options {
  std::uint32_t attempts = 12;
  std::uint64_t seed = 1;
  std::string format = "table";
};

// {"seed": S, "presets": [{"name", "formula", "source", "spec", "delays_s": [...]}]}: the same
// draws as the table, in seconds.
int print_presets_json(const presets_options& o) {
  nlohmann::ordered_json doc;
  doc["seed"] = o.seed;
  auto& list = doc["presets"] = nlohmann::ordered_json::array();
  const auto all = presets();
  for (std::size_t i = 0; i < all.size(); ++i) {
    nlohmann::ordered_json p;
    p["name"] = all[i].name;
    p["formula"] = all[i].formula;
    p["source"] = all[i].source;
    p["spec"] = all[i].policy.to_string();
    auto& delays = p["delays_s"] = nlohmann::ordered_json::array();
    for_each_delay(all[i].policy, derive_seed(o.seed, i), o.attempts,
                   [&](duration d) { delays.push_back(std::chrono::duration<double>(d).count()); });
    list.push_back(std::move(p));
  }
  std::cout << report::json_text(doc) << '\n';
  return flush_stdout("backoff presets") ? exit_ok : exit_failure;
}

int run_presets(const presets_options& o) {
  if (o.format == "json") return print_presets_json(o);
  const auto all = presets();
  // One row per retry, one column per preset; preset i draws from derive_seed(seed, i).
  report::text_table table;
  table.rows.assign(o.attempts + 1, {});
  table.rows[0].push_back("retry");
  for (std::uint32_t a = 1; a <= o.attempts; ++a) table.rows[a].push_back(std::to_string(a));
  for (std::size_t i = 0; i < all.size(); ++i) {
    table.rows[0].emplace_back(all[i].name);
    std::size_t row = 0;
    for_each_delay(all[i].policy, derive_seed(o.seed, i), o.attempts,
                   [&](duration d) { table.rows[++row].push_back(human_duration(d)); });
  }

  std::cout << fmt::format(
      "Delay before each retry, every preset (seed {}; random presets show "
      "one draw)\n\n",
      o.seed);
  std::cout << table.render() << '\n';
  std::size_t name_width = 0;
  for (const preset& p : all) name_width = std::max(name_width, p.name.size());
  for (const preset& p : all) {
    std::cout << fmt::format("{:<{}}  {}  [{}]\n{:<{}}  = {}\n", p.name, name_width, p.formula,
                             p.source, "", name_width, p.policy.to_string());
  }
  return flush_stdout("backoff presets") ? exit_ok : exit_failure;
}

}  // namespace

void setup_presets(CLI::App& app, int& status) {
  auto options = std::make_shared<presets_options>();
  CLI::App* cmd = app.add_subcommand("presets", "Show every named policy's delays side by side");
  add_count_option<std::uint32_t>(*cmd, "-n,--attempts", options->attempts,
                                  "Number of retries to show", 1, 1000)
      ->capture_default_str();
  add_seed_option(*cmd, "-s,--seed", options->seed, "Random seed for the jittered presets")
      ->capture_default_str();
  cmd->add_option("-f,--format", options->format, "Output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->callback([options, &status] { status = run_presets(*options); });
}

}  // namespace backoff::cli
