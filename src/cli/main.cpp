// SPDX-License-Identifier: Apache-2.0
// The `backoff` command: the subcommands (one file each), run by dispatch.hpp.
#include <array>
#include <iostream>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "dispatch.hpp"
#include "output.hpp"
#include "reference.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

// The subcommands without a command tail take the shared signature here.
template <void (*Setup)(CLI::App&, int&)>
void without_tail(CLI::App& app, int& status, const backoff::cli::command_tail&) {
  Setup(app, status);
}

// backoff --man; backoff --completion bash|zsh.
int print_reference(const CLI::App& app, int argc, char** argv) {
  using namespace backoff::cli;
  const std::string_view what = argv[1];
  std::vector<std::string> scenarios;
  for (const auto& s : backoff::sim::builtin_scenarios()) {
    std::string_view name = s.path;  // "builtin/NAME.toml"
    name.remove_prefix(name.rfind('/') + 1);
    name.remove_suffix(name.ends_with(".toml") ? 5 : 0);
    scenarios.emplace_back(name);
  }
  if (what == "--man" && argc == 2) {
    std::cout << man_page(app, std::string("backoff ") + BACKOFF_VERSION);
  } else if (what == "--completion" && argc == 3 && std::string_view(argv[2]) == "bash") {
    std::cout << bash_completion(app, scenarios);
  } else if (what == "--completion" && argc == 3 && std::string_view(argv[2]) == "zsh") {
    std::cout << zsh_completion(app, scenarios);
  } else {
    std::cerr << "backoff: expected 'backoff --man' or 'backoff --completion bash|zsh'\n";
    return exit_usage;
  }
  return flush_stdout("backoff " + std::string(what)) ? exit_ok : exit_failure;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace backoff::cli;
  static constexpr std::array<subcommand, 11> all{{
      {"delays", without_tail<setup_delays>},
      {"presets", without_tail<setup_presets>},
      {"sim", without_tail<setup_sim>},
      {"sweep", without_tail<setup_sweep>},
      {"try", setup_try},
      {"forany", setup_forany},
      {"forall", setup_forall},
      {"script", without_tail<setup_script>},
      {"serve", without_tail<setup_serve>},
      {"load", without_tail<setup_load>},
      {"proxy", without_tail<setup_proxy>},
  }};
  return run_subcommands(argc, argv, all, print_reference);
}
