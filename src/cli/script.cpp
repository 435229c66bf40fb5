// SPDX-License-Identifier: Apache-2.0
// `backoff script FILE`: runs a Fault Tolerant Shell script (docs/SCRIPTS.md): simple commands,
// `try [for] N times | for DURATION [or ...] [every DURATION] ... [catch ...] end`, forany, forall,
// for, success and failure, every command in its own process group under the tool's deadlines.
// Parse errors print "FILE:LINE: message" and exit 125, like the tool's other errors.
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "retry_flags.hpp"
#include "tool/script/interpreter.hpp"
#include "tool/script/parser.hpp"
#include "tool/signal_watcher.hpp"

namespace backoff::cli {
namespace {

struct script_flags {
  std::string file;
  std::string policy = "ftsh";
  std::string grace = "5s";
  std::string seed;
  bool shuffle = false;
  bool check = false;
  bool verbose = false;
};

int run_script_command(const script_flags& f) {
  const auto fail = [](const std::string& message) {
    std::cerr << "backoff script: " << message << '\n';
    return exit_tool_error;
  };
  tool::script::script_options options;
  try {
    options.policy = parse_policy(f.policy);
  } catch (const parse_error& e) {
    return fail(e.what());
  }
  try {
    options.grace = parse_flag_duration(f.grace);
  } catch (const parse_error& e) {
    return fail(std::string("--grace: ") + e.what());
  }
  std::uint64_t seed = 0;
  if (!f.seed.empty()) {
    const auto [end, ec] = std::from_chars(f.seed.data(), f.seed.data() + f.seed.size(), seed);
    if (ec != std::errc{} || end != f.seed.data() + f.seed.size()) {
      return fail("--seed: '" + f.seed + "' is too large");
    }
  } else {
    seed = fresh_seed();
  }
  std::error_code ec;
  if (std::filesystem::is_directory(f.file, ec)) {
    return fail("cannot read '" + f.file + "': it is a folder, not a script");
  }
  std::ifstream in(f.file, std::ios::binary);
  if (!in) return fail("cannot read '" + f.file + "': " + std::strerror(errno));
  // A script is a few KiB; /dev/zero or a runaway pipe must not fill memory.
  constexpr std::size_t max_script_bytes = std::size_t{16} << 20;
  bool too_large = false;
  const std::string text = read_at_most(in, max_script_bytes, too_large);
  if (too_large) return fail("cannot read '" + f.file + "': larger than 16 MiB: not a script");
  if (in.bad()) return fail("cannot read '" + f.file + "': " + std::strerror(errno));
  tool::script::script parsed;
  try {
    parsed = tool::script::parse(text, f.file);
  } catch (const parse_error& e) {
    std::cerr << e.what() << '\n';
    return exit_tool_error;
  }
  if (f.check) return exit_ok;
  options.environment = tool::current_environment();
  options.shuffle = f.shuffle;
  options.verbose = f.verbose;
  try {
    tool::cancel_scope scope;
    tool::script::script_result result;
    {
      const tool::signal_watcher watcher(scope);
      random_generator rng(seed);
      result = tool::script::run_script(parsed, options, scope, rng);
    }
    if (scope.cancelled()) {
      std::cerr << "backoff script: stopped by signal " << scope.signal() << " ("
                << ::strsignal(scope.signal()) << ")\n";
      return tool::status_signal_base + scope.signal();
    }
    return result.status;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

}  // namespace

void setup_script(CLI::App& app, int& status) {
  auto flags = std::make_shared<script_flags>();
  CLI::App* sub = app.add_subcommand(
      "script", "Run a Fault Tolerant Shell script: try/forany/forall blocks around commands");
  sub->add_option("file", flags->file, "The script (docs/SCRIPTS.md)")->required();
  sub->add_option("--policy", flags->policy, "Backoff between a try's attempts (spec or preset)")
      ->capture_default_str();
  sub->add_option("--grace", flags->grace, "Between TERM and KILL when a command is stopped")
      ->capture_default_str();
  sub->add_flag("--shuffle", flags->shuffle, "forany starts at a random item (as ftsh does)");
  sub->add_option("--seed", flags->seed, "Seed for the jitter and --shuffle")
      ->check(whole_number());
  sub->add_flag("--check", flags->check, "Only parse the script: report errors, run nothing");
  sub->add_flag("-v,--verbose", flags->verbose,
                "Log every command with its status, and every try's attempts and waits");
  sub->callback([flags, &status] { status = run_script_command(*flags); });
}

}  // namespace backoff::cli
