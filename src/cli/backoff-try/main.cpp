// SPDX-License-Identifier: Apache-2.0
// `backoff-try [OPTIONS] -- COMMAND [ARGS...]`: `backoff try` as an executable of its own, which
// links the retry tool and nothing of the simulator, the network harness or the report charts, so
// that it starts as fast as the commands it replaces (docs/PERFORMANCE.md, "Start-up").
#include <array>
#include <string>
#include <vector>

#include "../dispatch.hpp"

int main(int argc, char** argv) {
  static constexpr std::array<backoff::cli::subcommand, 1> only_try{{
      {"try", backoff::cli::setup_try},
  }};
  // The same command line as `backoff try ...`.
  std::string try_word = "try";
  std::vector<char*> args{argv[0], try_word.data()};
  args.insert(args.end(), argv + 1, argv + argc);
  args.push_back(nullptr);
  return backoff::cli::run_subcommands(static_cast<int>(args.size() - 1), args.data(), only_try);
}
