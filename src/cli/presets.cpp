// `backoff presets`: every named policy side by side, one column per preset, one row per retry,
// followed by each preset's formula, source and canonical spec.
#include "backoff/presets.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "output.hpp"

namespace backoff::cli {
namespace {

struct presets_options {
  std::uint32_t attempts = 12;
  std::uint64_t seed = 1;
};

int run_presets(const presets_options& o) {
  const auto all = presets();
  std::vector<std::vector<std::string>> columns;
  for (std::size_t i = 0; i < all.size(); ++i) {
    random_generator rng{derive_seed(o.seed, i)};
    auto state = all[i].policy.start();
    std::vector<std::string> column{std::string(all[i].name)};
    for (std::uint32_t a = 0; a < o.attempts; ++a)
      column.push_back(human_duration(state.next_delay(rng)));
    columns.push_back(std::move(column));
  }

  std::cout << fmt::format(
      "Delay before each retry, every preset (seed {}; random presets show "
      "one draw)\n\n",
      o.seed);
  const std::size_t rows = o.attempts + 1;
  for (std::size_t r = 0; r < rows; ++r) {
    std::string line = fmt::format("{:>5}", r == 0 ? std::string("retry") : std::to_string(r));
    for (const auto& column : columns) {
      std::size_t width = 0;
      for (const auto& cell : column) width = std::max(width, cell.size());
      line += fmt::format("  {:>{}}", column[r], width);
    }
    std::cout << line << '\n';
  }

  std::cout << '\n';
  std::size_t name_width = 0;
  for (const preset& p : all) name_width = std::max(name_width, p.name.size());
  for (const preset& p : all) {
    std::cout << fmt::format("{:<{}}  {}  [{}]\n{:<{}}  = {}\n", p.name, name_width, p.formula,
                             p.source, "", name_width, p.policy.to_string());
  }
  return exit_ok;
}

}  // namespace

void setup_presets(CLI::App& app, int& status) {
  auto options = std::make_shared<presets_options>();
  CLI::App* cmd = app.add_subcommand("presets", "Show every named policy's delays side by side");
  cmd->add_option("-n,--attempts", options->attempts, "Number of retries to show")
      ->check(whole_number())
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  cmd->add_option("-s,--seed", options->seed, "Random seed for the jittered presets")
      ->check(whole_number())
      ->capture_default_str();
  cmd->callback([options, &status] { status = run_presets(*options); });
}

}  // namespace backoff::cli
