// SPDX-License-Identifier: Apache-2.0
// `backoff script FILE`: runs a Fault Tolerant Shell script (docs/SCRIPTS.md): simple commands,
// `try [for] N times | for DURATION [or ...] [every DURATION] ... [catch ...] end`, forany, forall,
// for, success and failure, every command in its own process group under the tool's deadlines.
// Parse errors print "backoff script: FILE:LINE: message" and exit 125, like the tool's other
// errors.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "report/output_files.hpp"
#include "retry_flags.hpp"
#include "tool/message_prefix.hpp"
#include "tool/script/interpreter.hpp"
#include "tool/script/parser.hpp"
#include "tool/signal_watcher.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace {

struct script_flags {
  std::string file;
  std::string policy = "ftsh";
  duration grace = std::chrono::seconds(5);
  std::optional<std::uint64_t> seed;  // nullopt: a fresh one
  bool shuffle = false;
  bool check = false;
  bool verbose = false;
  std::optional<std::string> report;
};

// --report: the script's status and what it ran, for a machine:
// {"script", "status", "ok", "events": [{"line", "kind": "command", "argv", "status",
// "start_s", "duration_s"} or {"line", "kind": "attempt", "attempt", "status", "start_s",
// "duration_s", "delay_s"}]}.
std::string report_json(const std::string& file,
                        const std::vector<tool::script::script_event>& recorded, int status) {
  nlohmann::ordered_json doc;
  doc["script"] = file;
  doc["status"] = status;
  doc["ok"] = status == 0;
  auto& events = doc["events"] = nlohmann::ordered_json::array();
  const auto seconds = [](duration d) { return std::chrono::duration<double>(d).count(); };
  for (const auto& e : recorded) {
    nlohmann::ordered_json j;
    j["line"] = e.line;
    const bool command = e.what == tool::script::script_event::kind::command;
    j["kind"] = command ? "command" : "attempt";
    if (command) {
      j["argv"] = e.argv;
    } else {
      j["attempt"] = e.attempt;
    }
    j["status"] = e.status;
    j["start_s"] = seconds(e.start);
    j["duration_s"] = seconds(e.elapsed);
    if (!command) j["delay_s"] = e.delay ? nlohmann::ordered_json(seconds(*e.delay)) : nullptr;
    events.push_back(std::move(j));
  }
  // Bytes that are not UTF-8 (an argument) become U+FFFD.
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// `prefix` ("backoff script: ") starts every line on stderr, a FILE:LINE message's too.
int run_script_command(const script_flags& f, const std::string& prefix) {
  const auto fail = [&prefix](const std::string& message) {
    std::cerr << prefix << message << '\n';
    return exit_tool_error;
  };
  tool::script::script_options options;
  options.message_prefix = prefix;
  try {
    options.policy = parse_policy(f.policy);
  } catch (const parse_error& e) {
    return fail(e.what());
  }
  options.grace = f.grace;
  const std::uint64_t seed = f.seed ? *f.seed : fresh_seed();
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
    return fail(e.what());  // FILE:LINE: message
  }
  if (f.check) return exit_ok;
  options.environment = tool::current_environment();
  options.shuffle = f.shuffle;
  options.verbose = f.verbose;
  // With --report -, stdout is the report's alone: the commands' output goes to stderr.
  if (f.report && *f.report == "-") options.command_stdout_fd = STDERR_FILENO;
  if (f.report && f.report->empty()) return fail("--report: needs a file, or - for stdout");
  std::optional<report::atomic_file> report_file;
  if (f.report && *f.report != "-") {
    try {
      report_file.emplace(*f.report);  // now: an unwritable --report fails before anything runs
    } catch (const report::write_error& e) {
      return fail(std::string("--report: ") + e.what());
    }
  }
  // A closed stderr or stdout is an error to handle, not a signal that kills the tool while its
  // commands run on (tool/run_output.hpp).
  tool::ignore_write_signals();
  try {
    tool::cancel_scope scope;
    tool::script::script_result result;
    std::vector<tool::script::script_event> events;
    {
      const tool::signal_watcher watcher(scope);
      random_generator rng(seed);
      result = tool::script::run_script(parsed, options, scope, rng, f.report ? &events : nullptr);
    }
    const int status = scope.cancelled() ? tool::status_of_signal(scope.signal()) : result.status;
    if (f.report) {
      const std::string json = report_json(f.file, events, status);
      const std::string note = "(the script's status was " + std::to_string(status) + ")";
      if (report_file) {
        try {
          report_file->stream() << json << '\n';
          report_file->commit();
        } catch (const report::write_error& e) {
          std::cerr << prefix << "--report: " << e.what() << " " << note << '\n';
          return exit_tool_error;
        }
      } else {
        std::cout << json << '\n';
        if (!flush_stdout(prefix + "--report", note)) return exit_tool_error;
      }
    }
    if (scope.cancelled()) {
      std::cerr << prefix << "stopped by signal " << scope.signal() << " ("
                << ::strsignal(scope.signal()) << ")\n";
    } else if (result.output_closed) {  // to stderr, which may be what was closed
      std::cerr << prefix
                << "stopped: its output was closed (Broken pipe); the running commands were "
                   "stopped\n";
    }
    return status;
  } catch (const tool::script::script_error& e) {
    return fail(e.what());  // FILE:LINE: message, as a parse error
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
  add_duration_option(*sub, "--grace", flags->grace,
                      "Between TERM and KILL when a command is stopped")
      ->capture_default_str();
  sub->add_flag("--shuffle", flags->shuffle, "forany starts at a random item (as ftsh does)");
  add_seed_option(*sub, "--seed", flags->seed, "Seed for the jitter and --shuffle");
  sub->add_flag("--check", flags->check, "Only parse the script: report errors, run nothing");
  sub->add_flag("-v,--verbose", flags->verbose,
                "Log every command with its status, and every try's attempts and waits");
  sub->add_option("--report", flags->report,
                  "Write a JSON report of every command and attempt to FILE or - (stdout; the "
                  "commands' own stdout then goes to stderr)");
  sub->callback([sub, flags, &status] {
    status = run_script_command(*flags, tool::message_prefix(sub->get_name()));
  });
}

}  // namespace backoff::cli
