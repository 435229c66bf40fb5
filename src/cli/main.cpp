// SPDX-License-Identifier: Apache-2.0
// The `backoff` command: the subcommands (one file each), run by dispatch.hpp.
#include <array>

#include "commands.hpp"
#include "dispatch.hpp"

namespace {

// The subcommands without a command tail take the shared signature here.
template <void (*Setup)(CLI::App&, int&)>
void without_tail(CLI::App& app, int& status, const backoff::cli::command_tail&) {
  Setup(app, status);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace backoff::cli;
  static constexpr std::array<subcommand, 10> all{{
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
  }};
  return run_subcommands(argc, argv, all);
}
