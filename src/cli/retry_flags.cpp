// SPDX-License-Identifier: Apache-2.0
#include "retry_flags.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string_view>
#include <utility>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "report/output_files.hpp"
#include "tool/deadline_env.hpp"
#include "tool/message_prefix.hpp"
#include "tool/signal_watcher.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace {

constexpr std::uint32_t default_times = 5;

}  // namespace

void add_retry_flags(CLI::App& sub, retry_flags& f) {
  add_count_option<std::uint32_t>(
      sub, "--times", f.times,
      "Attempts at most (0: no limit), so at most N - 1 waits between them (`backoff delays "
      "--attempts` counts those waits). Default: 5, or no limit when --for is given",
      0, std::numeric_limits<std::uint32_t>::max());
  add_duration_option(sub, "--for", f.within,
                      "Deadline (e.g. 10m), a hard cap: the running attempt is stopped at it "
                      "(status 124), and a retry that would start with less than 100ms left is "
                      "not made",
                      {.positive = true});
  add_duration_option(sub, "--every", f.every,
                      "Start attempts this far apart (start to start, as ftsh's `every`) instead "
                      "of backing off");
  add_duration_option(sub, "--timeout", f.timeout, "Stop an attempt after this long (status 124)",
                      {.positive = true});
  sub.add_option("--policy", f.policy,
                 "Backoff policy spec or preset (see `backoff presets`). Default: ftsh, "
                 "1 s doubling to 1 h, times U(1, 2)");
  add_duration_option(sub, "--grace", f.grace,
                      "Between TERM and KILL when an attempt is stopped (default: 5s)");
  sub.add_option("--until", f.until,
                 "Stop retrying on any of these statuses: success, fail, N, N-M, comma-separated "
                 "(default: success)");
  sub.add_option("--while", f.while_,
                 "Retry only on these statuses (same syntax); stop on any other");
  sub.add_flag("--replay-stdin", f.replay_stdin,
               "Read stdin once (to a temporary file, not memory) and give it to every attempt");
  add_size_option(sub, "--replay-stdin-limit", f.replay_stdin_limit,
                  "With --replay-stdin: the most stdin it reads (e.g. 512MiB; none: no limit); "
                  "more is status 125, and nothing runs. Default: 1GiB",
                  {.none = true})
      ->each([&f](const std::string& text) { f.replay_stdin_limit_text = text; });
  sub.add_flag("--stdout-on-success", f.stdout_on_success,
               "Hold each attempt's stdout (on disk) and pass it on only if the attempt "
               "succeeded; a failed attempt's goes to stderr");
  sub.add_flag("--foreground", f.foreground,
               "Run the command in backoff's process group (it can read the terminal), so a "
               "timeout stops only the command, not its children");
  sub.add_flag("-q,--quiet", f.quiet,
               "Say nothing on stderr but what must be said (a command that cannot run); by "
               "default each retried attempt gets a line (its status, the next delay), as "
               "Debian's retry does");
  sub.add_flag("-v,--verbose", f.verbose,
               "Also log the attempt that succeeded, and waits for descriptors or processes");
  sub.add_option("--report", f.report,
                 "Write a JSON report of every attempt to FILE or - (stdout)");
  add_seed_option(sub, "--seed", f.seed, "Seed for the jitter (reproducible delays)");
}

bool to_command_options(const std::string& name, const retry_flags& f,
                        tool::command_options& options) {
  options.message_prefix = tool::message_prefix(name);
  const auto fail = [&](const std::string& message) {
    std::cerr << options.message_prefix << message << '\n';
    return false;
  };
  if (f.command.empty()) {
    return fail("no command given (usage: backoff " + name + " [OPTIONS] -- COMMAND [ARGS...])");
  }
  if (f.every && f.policy) {
    return fail("--every and --policy both set the wait between attempts; give one");
  }
  if (f.until && f.while_) {
    return fail("--until and --while both decide when to stop; give one");
  }
  if (f.report && f.report->empty()) {
    return fail("--report: needs a FILE, or - for stdout");
  }
  try {
    options.loop.policy.backoff = parse_policy(f.policy.value_or("ftsh"));
  } catch (const parse_error& e) {
    return fail(e.what());
  }
  try {
    if (f.until) options.until = tool::parse_status_list(*f.until);
  } catch (const parse_error& e) {
    return fail(std::string("--until: ") + e.what());
  }
  try {
    if (f.while_) options.while_ = tool::parse_status_list(*f.while_);
  } catch (const parse_error& e) {
    return fail(std::string("--while: ") + e.what());
  }
  options.loop.policy.max_attempts = f.times.value_or(f.within ? 0 : default_times);
  options.loop.policy.max_elapsed = f.within.value_or(duration{0});
  options.loop.every = f.every;
  const tool::inherited_deadline inherited = tool::read_inherited_deadline(
      std::getenv("BACKOFF_DEADLINE"), std::getenv("BACKOFF_DEADLINE_OWNER"));
  if (!inherited.note.empty()) std::cerr << options.message_prefix << inherited.note << '\n';
  options.loop.outer_deadline = inherited.deadline;
  options.timeout = f.timeout;
  options.grace = f.grace.value_or(std::chrono::seconds(5));
  if (f.replay_stdin_limit) {
    if (!f.replay_stdin) {
      return fail("--replay-stdin-limit is for --replay-stdin, which is not given");
    }
    options.stdin_replay_limit = *f.replay_stdin_limit;
  }
  options.stdout_on_success = f.stdout_on_success;
  // With --report -, stdout is the report's alone: the commands' output goes to stderr.
  if (f.report && *f.report == "-") options.command_stdout_fd = STDERR_FILENO;
  options.own_group = !f.foreground;
  if (f.quiet && f.verbose) return fail("give -q or -v, not both");
  options.verbose = f.verbose;
  options.log = f.quiet     ? tool::command_options::log_level::quiet
                : f.verbose ? tool::command_options::log_level::verbose
                            : tool::command_options::log_level::retries;
  return true;
}

int run_retry_command(
    const retry_flags& f, tool::command_options options,
    const std::function<tool::run_summary(const tool::command_options&, const tool::cancel_scope&,
                                          random_ref)>& run) {
  const std::string& prefix = options.message_prefix;  // to_command_options set it
  const std::uint64_t seed = f.seed ? *f.seed : fresh_seed();
  // The report file is created (as a hidden temporary beside it) before the command runs, so an
  // unwritable --report fails at once; it is renamed into place when the summary is written.
  std::optional<report::atomic_file> report_file;
  if (f.report && *f.report != "-") {
    try {
      report_file.emplace(*f.report);
    } catch (const report::write_error& e) {
      std::cerr << prefix << "--report: " << e.what() << '\n';
      return exit_tool_error;
    }
  }
  // From here on a closed stderr or stdout, or the file-size limit, is an error to handle, not a
  // signal that kills the tool while its attempts run on (run_output.hpp).
  tool::ignore_write_signals();
  try {
    // Before the signal watcher: until the first attempt there is nothing to clean up, so a
    // Ctrl-C while stdin is being read may simply end the tool.
    if (f.replay_stdin) {
      auto input = std::make_shared<tool::spool>(tool::spool::create());
      try {
        input->fill_from(STDIN_FILENO, options.stdin_replay_limit);
      } catch (const tool::spool_full& e) {
        std::string why = e.what();
        if (e.why() == tool::spool_full::reason::limit) {
          why = "standard input is larger than --replay-stdin-limit (" +
                (f.replay_stdin_limit ? f.replay_stdin_limit_text : std::string("1GiB")) + ")";
        }
        std::cerr << prefix << "--replay-stdin: " << why << "; nothing was run\n";
        return exit_tool_error;
      }
      options.stdin_replay = std::move(input);
    }
    // One run per process: the scope and its signal watcher live until the process ends and the
    // watcher's thread is never joined (exit ends it). Joining meant waiting for that thread to
    // wake up, about 0.05 ms of every `backoff-try` start (docs/PERFORMANCE.md, "Start-up").
    static tool::cancel_scope& scope = *new tool::cancel_scope;
    static const tool::signal_watcher& watcher = *new tool::signal_watcher(scope);
    (void)watcher;
    tool::run_summary summary;
    {
      random_generator rng(seed);
      summary = run(options, scope, rng);
    }
    if (f.report) {
      // The command ran: a failure here is the tool's own (125), and the message keeps the
      // command's status. Bytes that are not UTF-8 (an argument, a path) become U+FFFD.
      const std::string text =
          tool::to_json(summary).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
      std::string failure;
      if (report_file) {
        try {
          report_file->stream() << text << '\n';
          report_file->commit();
        } catch (const report::write_error& e) {
          failure = e.what();
        }
      } else {
        std::cout << text << '\n';
        if (!flush_stdout(prefix + "--report",
                          "(the command's status was " + std::to_string(summary.status) + ")")) {
          return exit_tool_error;
        }
      }
      if (!failure.empty()) {
        std::cerr << prefix << "--report: " << escape_controls(failure)
                  << " (the command's status was " << summary.status << ")\n";
        return exit_tool_error;
      }
    }
    if (summary.interrupted != 0) {
      std::cerr << prefix << "stopped by signal " << summary.interrupted << " ("
                << ::strsignal(summary.interrupted) << ")\n";
    } else if (summary.output_closed) {  // to stderr, which may be what was closed
      std::cerr << prefix
                << "stopped: its output was closed (Broken pipe); the running commands were "
                   "stopped\n";
    }
    return summary.status;
  } catch (const std::exception& e) {
    std::cerr << prefix << e.what() << '\n';
    return exit_tool_error;
  }
}

command_tail split_command_tail(int& argc, char** argv) {
  command_tail tail;
  if (argc < 2) return tail;
  const std::string_view sub = argv[1];
  const bool single = sub == "try";
  if (!single && sub != "forany" && sub != "forall") return tail;
  // The options that take a value (the next word, unless written --name=value). Keep in sync with
  // add_retry_flags and the fan-out commands' own options.
  static constexpr std::string_view with_value[] = {
      "--times",
      "--for",
      "--every",
      "--timeout",
      "--policy",
      "--grace",
      "--until",
      "--while",
      "--report",
      "--seed",
      "-j",
      "--jobs",
      "--replay-stdin-limit",
  };
  const auto takes_value = [](std::string_view word) {
    for (const std::string_view o : with_value) {
      if (word == o) return true;
    }
    return false;
  };
  // Only a "--" where an option or an item could stand separates: one inside the command
  // (`backoff try git checkout -- file`) belongs to the command.
  for (int i = 2; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") {
      tail.present = true;
      for (int j = i + 1; j < argc; ++j) tail.words.emplace_back(argv[j]);
      argc = i;
      return tail;
    }
    if (word.size() > 1 && word[0] == '-') {
      if (takes_value(word)) ++i;
      continue;  // an option; an unknown one is left for CLI11 to reject
    }
    if (single) {  // `backoff try CMD ARGS...`: the command starts at the first other word
      tail.present = true;
      for (int j = i; j < argc; ++j) tail.words.emplace_back(argv[j]);
      argc = i;
      return tail;
    }
  }
  return tail;
}

}  // namespace backoff::cli
