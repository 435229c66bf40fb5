// SPDX-License-Identifier: Apache-2.0
// The `backoff` command: wires the subcommands (one file each) into one CLI11 app, and turns
// command-line mistakes into one line on stderr and exit status 2.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "output.hpp"
#include "retry_flags.hpp"
#include "seed_flags.hpp"

namespace {

// The retry commands (try, forany, forall, script) report their own errors as 125, so that a usage
// mistake is never taken for the command's status (docs/EXIT_CODES.md).
bool is_retry_command(const char* name) {
  const std::string_view n = name;
  return n == "try" || n == "forany" || n == "forall" || n == "script";
}

}  // namespace

int main(int argc, char** argv) {
  const backoff::cli::command_tail tail = backoff::cli::split_command_tail(argc, argv);
  CLI::App app{"backoff: when a call fails, when and whether to try again"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("backoff ") + BACKOFF_VERSION);
  int status = backoff::cli::exit_ok;
  backoff::cli::setup_delays(app, status);
  backoff::cli::setup_presets(app, status);
  backoff::cli::setup_sim(app, status);
  backoff::cli::setup_sweep(app, status);
  backoff::cli::setup_try(app, status, tail);
  backoff::cli::setup_forany(app, status, tail);
  backoff::cli::setup_forall(app, status, tail);
  backoff::cli::setup_script(app, status);
  backoff::cli::setup_serve(app, status);
  backoff::cli::setup_load(app, status);

  std::vector<std::string> args = backoff::cli::with_seed_flags(
      argc, argv, [&app](std::string_view command, const std::string& flag) {
        const CLI::App* sub = app.get_subcommand(std::string(command));
        return sub->get_option_no_throw(flag) != nullptr;
      });
  std::vector<char*> arg_pointers;
  for (std::string& a : args) arg_pointers.push_back(a.data());
  argv = arg_pointers.data();

  // CLI11 reports an unknown command as a missing one; name it instead.
  const auto all = app.get_subcommands([](const CLI::App*) { return true; });
  const auto is_command = [&](const std::string& name) {
    for (const CLI::App* sub : all) {
      if (sub->get_name() == name) return true;
    }
    return false;
  };
  std::string known;
  for (const CLI::App* sub : all) known += (known.empty() ? "" : ", ") + sub->get_name();
  if (argc > 1 && argv[1][0] != '-' && !is_command(argv[1])) {
    std::cerr << "backoff: unknown command '" << argv[1] << "' (commands: " << known
              << "; see 'backoff --help')\n";
    return backoff::cli::exit_usage;
  }
  // Before the command only --help and --version mean anything; CLI11 would call any other flag
  // a missing command.
  if (argc > 1 && argv[1][0] == '-') {
    const std::string_view flag = argv[1];
    if (flag != "-h" && flag != "--help" && flag != "--help-all" && flag != "--version") {
      std::cerr << "backoff: unknown option '" << flag
                << "' (before the command: --help, --version; commands: " << known << ")\n";
      return backoff::cli::exit_usage;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line: what is wrong, then where to look.
    std::string where = "backoff";
    for (const CLI::App* sub : app.get_subcommands()) where += " " + sub->get_name();
    std::cerr << where << ": " << e.what() << " (see '" << where << " --help')\n";
    return argc > 1 && is_retry_command(argv[1]) ? backoff::cli::exit_tool_error
                                                 : backoff::cli::exit_usage;
  }
  // Whatever a command printed last must reach stdout: a write error there is never status 0.
  // The retry commands keep the command's status in the message and exit 125 (their own
  // failure); the others exit 1.
  const bool retry = is_retry_command(argv[1]);
  if (!backoff::cli::flush_stdout(
          std::string("backoff ") + argv[1],
          retry ? "(the command's status was " + std::to_string(status) + ")" : std::string())) {
    if (retry) return backoff::cli::exit_tool_error;
    return status == backoff::cli::exit_ok ? backoff::cli::exit_failure : status;
  }
  return status;
}
