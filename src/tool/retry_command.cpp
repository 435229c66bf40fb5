// SPDX-License-Identifier: Apache-2.0
#include "retry_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <system_error>

#include "deadline_env.hpp"
#include "descriptors.hpp"
#include "run_output.hpp"
#include "workers.hpp"

namespace backoff::tool {
namespace {

std::string seconds_text(duration d) {
  return fmt::format("{:.3f}s", to_seconds(d));
}

std::string describe(const attempt_result& r) {
  switch (r.ended) {
    case attempt_end::exited:
      return fmt::format("exit status {}", r.exit_code);
    case attempt_end::signaled:
      return fmt::format("killed by signal {} ({})", r.signal, ::strsignal(r.signal));
    case attempt_end::timed_out:
      return "timed out";
    case attempt_end::cancelled:
      return "stopped";
    case attempt_end::not_found:
    case attempt_end::not_executable:
      return r.error;
  }
  return "?";
}

std::string stop_reason(const loop_result& result) {
  if (result.no_time_left) {
    if (result.refused_delay >= result.left) {
      return "giving up: the next wait would reach the deadline, " + seconds_text(result.left) +
             " away";
    }
    return fmt::format(
        "giving up: after the next wait ({}) only {} would be left before the deadline, less than "
        "the {} an attempt needs",
        seconds_text(result.refused_delay), seconds_text(result.left - result.refused_delay),
        seconds_text(minimum_attempt_time));
  }
  switch (result.why) {
    case outcome::attempts_exhausted:
      return "giving up: no attempts left";
    case outcome::deadline_exceeded:
      return "giving up: the deadline has come";
    case outcome::permanent:
      return "giving up: not retryable";
    case outcome::cancelled:
      return "stopped";
    default:
      return std::string(to_string(result.why));
  }
}

constexpr const char* no_attempt_made =
    "no attempt made: the inherited deadline (BACKOFF_DEADLINE) has passed";

// What one run (try, forany, forall) shares between its items. Its attempts run under
// log.scope(): the caller's scope, also cancelled when the tool's output is closed.
struct run_context {
  run_context(const command_options& o, const std::vector<std::string>& c,
              const cancel_scope& scope)
      : options(o), command(c), log(scope, o.message_prefix) {}
  const command_options& options;
  const std::vector<std::string>& command;
  std::vector<std::string> environment = current_environment();
  run_output log;
};

// Opens what one attempt needs (its stdout spool, its stdin reader) and runs it. Throws
// start_shortage, with nothing started, when a descriptor or a process is missing.
attempt_result start_attempt(run_context& ctx, launch_spec& spec, const attempt_limits& limits,
                             const cancel_scope& scope, const classify_function& classify) {
  const command_options& options = ctx.options;
  spec.descriptors.clear();
  std::optional<spool> held_stdout;
  if (options.stdout_on_success) {
    held_stdout.emplace(spool::create());
    spec.descriptors.emplace_back(1, held_stdout->fd());
  } else if (options.command_stdout_fd != STDOUT_FILENO) {
    spec.descriptors.emplace_back(1, options.command_stdout_fd);
  }
  int stdin_fd = -1;
  if (options.stdin_replay) {
    stdin_fd = options.stdin_replay->open_reader();
    spec.descriptors.emplace_back(0, stdin_fd);
  }
  attempt_result r;
  try {
    r = run_attempt(spec, limits, scope, [&](const attempt_result& done) {
      return classify(done).kind == verdict_kind::success;
    });
  } catch (...) {
    if (stdin_fd >= 0) ::close(stdin_fd);
    throw;
  }
  if (stdin_fd >= 0) ::close(stdin_fd);
  if (held_stdout) {
    const bool succeeded = classify(r).kind == verdict_kind::success;
    ctx.log.pass_on(*held_stdout, succeeded ? options.command_stdout_fd : STDERR_FILENO);
  }
  return r;
}

// One item's command (`{}` replaced), environment and "[ITEM] " after the prefix of the run's
// lines: runs its attempts, each with
// BACKOFF_ATTEMPT, BACKOFF_MAX_ATTEMPTS and the deadline in its environment, and writes the
// start of an attempt's log line.
class item_runner {
 public:
  item_runner(run_context& ctx, const std::optional<std::string>& item)
      : classify(classify_status(ctx.options.until, ctx.options.while_)),
        prefix(item ? fmt::format("[{}] ", *item) : ""),
        ctx_(ctx),
        environment_(ctx.environment),
        max_attempts_(ctx.options.loop.policy.max_attempts) {
    spec_.argv = item ? substitute_item(ctx.command, *item) : ctx.command;
    spec_.own_group = ctx.options.own_group;
    if (item) set_variable(environment_, "BACKOFF_ITEM", *item);
  }

  // A start that finds no descriptor (or process) left waits for another attempt to end and
  // tries again; the per-attempt timeout counts from the start that works.
  attempt_result run(const attempt_info& info, const cancel_scope& scope) {
    const command_options& options = ctx_.options;
    spec_.environment = environment_;
    set_variable(spec_.environment, "BACKOFF_ATTEMPT", std::to_string(info.number));
    if (max_attempts_ != 0) {
      set_variable(spec_.environment, "BACKOFF_MAX_ATTEMPTS", std::to_string(max_attempts_));
    } else {
      unset_variable(spec_.environment, "BACKOFF_MAX_ATTEMPTS");  // an outer run's limit
    }
    // Every attempt under a deadline is told it, so that a nested run never outlives it.
    if (info.deadline) export_deadline(spec_.environment, info.deadline);
    for (;;) {
      attempt_slot slot;  // run_attempt's own slot is this one
      attempt_limits limits;
      limits.grace = options.grace;
      limits.kill_at = info.deadline;
      if (options.timeout) {
        const duration own = saturating_add(steady_now(), *options.timeout);
        limits.kill_at = limits.kill_at ? std::min(*limits.kill_at, own) : own;
      }
      try {
        return start_attempt(ctx_, spec_, limits, scope, classify);
      } catch (const start_shortage& e) {
        if (options.verbose) {
          ctx_.log.line(fmt::format("{}attempt {} waits for another command to end: {}", prefix,
                                    info.number, e.what()));
        }
        const duration waited_from = steady_now();
        if (slot.wait_after_shortage(scope, info.deadline)) continue;
        attempt_result r;
        r.elapsed = steady_now() - waited_from;
        if (scope.cancelled()) {
          r.ended = attempt_end::cancelled;
          r.cancel_signal = scope.signal();
          return r;
        }
        if (info.deadline && steady_now() >= *info.deadline) {
          r.ended = attempt_end::timed_out;
          return r;
        }
        throw_gave_up(e, spec_.argv[0]);
      }
    }
  }

  // A command that could not be started gets one line, verbose or not, and no other: true then.
  bool said_cannot_run(const attempt_result& r) const {
    if (r.ended != attempt_end::not_found && r.ended != attempt_end::not_executable) return false;
    ctx_.log.line(prefix + r.error);
    return true;
  }

  // "[ITEM] attempt 2/5: exit status 1 after 0.012s", for the caller to go on.
  std::string attempt_line(const attempt_record& record) const {
    const std::string of = max_attempts_ != 0 ? fmt::format("/{}", max_attempts_) : "";
    return fmt::format("{}attempt {}{}: {} after {}", prefix, record.number, of,
                       describe(record.result), seconds_text(record.result.elapsed));
  }

  const classify_function classify;
  const std::string prefix;

 private:
  run_context& ctx_;
  launch_spec spec_;
  std::vector<std::string> environment_;
  std::uint32_t max_attempts_;
};

// Runs the command for one item under the retry loop.
item_summary run_item(run_context& ctx, const std::optional<std::string>& item,
                      const cancel_scope& scope, random_ref rng) {
  const command_options& options = ctx.options;
  item_summary summary;
  summary.item = item;
  summary.started = true;
  item_runner runner(ctx, item);

  const auto observe = [&](const attempt_record& record) {
    summary.attempts.push_back(record);
    const attempt_result& r = record.result;
    if (runner.said_cannot_run(r)) return;
    const bool retried = record.delay.has_value();
    if (options.log == command_options::log_level::quiet ||
        (!retried && options.log != command_options::log_level::verbose)) {
      return;
    }
    std::string line = runner.attempt_line(record);
    if (record.delay) {
      line += "; next attempt in " + seconds_text(*record.delay);
    } else if (runner.classify(r).kind == verdict_kind::success) {
      line += ": done";
    }
    ctx.log.line(line);
  };

  summary.result = run_attempt_loop(
      options.loop, scope, rng, [&](const attempt_info& info) { return runner.run(info, scope); },
      runner.classify, observe);
  const attempt_end last = summary.result.last.ended;
  const bool could_not_run = last == attempt_end::not_found || last == attempt_end::not_executable;
  if (summary.result.attempts == 0 && summary.result.why == outcome::deadline_exceeded) {
    // Always said: a run that does nothing must say why.
    ctx.log.line(runner.prefix + no_attempt_made);
  } else if (options.log != command_options::log_level::quiet && !could_not_run &&
             summary.result.why != outcome::succeeded && summary.result.why != outcome::cancelled) {
    ctx.log.line(runner.prefix + stop_reason(summary.result));
  }
  return summary;
}

// The status the tool exits with for an item's loop.
int item_status(const item_summary& item) {
  return item.result.last.status();
}

// A run stopped by a signal to the tool (128 + n) or by its output closed under it (141): true,
// with the summary's outcome and status set.
bool stopped(run_summary& summary, const cancel_scope& scope, const run_output& out) {
  if (scope.cancelled()) {
    summary.why = outcome::cancelled;
    summary.interrupted = scope.signal();
    summary.status = status_of_signal(scope.signal());
    return true;
  }
  if (out.closed()) {
    summary.why = outcome::cancelled;
    summary.output_closed = true;
    summary.status = status_output_closed;
    return true;
  }
  return false;
}

void finish(run_summary& summary, const cancel_scope& scope, const run_output& out,
            const item_summary& last) {
  if (stopped(summary, scope, out)) return;
  summary.why = last.result.why;
  summary.status = item_status(last);
}

// forany as ftsh's forany inside a `try`: a round is one attempt of each item in turn, from the
// first; the first success ends the run; the policy's wait (and --times, --for, --every) is the
// loop's, between rounds. An item whose failure is not retryable is dropped from later rounds.
// A later item of a round starts at once, but only with the loop's minimum time left before the
// deadline (a retry's rule).
class forany_rounds {
 public:
  forany_rounds(run_context& ctx, const std::vector<std::string>& items, std::size_t first,
                run_summary& summary)
      : ctx_(ctx), summary_(summary) {
    entries_.reserve(items.size());
    for (std::size_t k = 0; k < items.size(); ++k) {
      const std::string& item = items[(first + k) % items.size()];
      entries_.push_back(entry{item_runner(ctx, item), item, false, std::nullopt});
    }
  }

  // Tries the items left, in order; returns the last attempt's result.
  attempt_result run_round(const attempt_info& round, const cancel_scope& scope) {
    attempt_result last;
    for (std::optional<std::size_t> k = next_entry(0); k;) {
      entry& e = entries_[*k];
      attempt_record record;
      record.number = round.number;
      record.start_unix_s = unix_now_s();
      record.result = e.runner.run(round, scope);
      last = record.result;
      last_attempt_ = add_attempt(e, record);
      last_logged_ = false;
      if (record.result.ended == attempt_end::cancelled || scope.cancelled()) break;
      const verdict_kind kind = e.runner.classify(record.result).kind;
      if (kind == verdict_kind::success) {
        winner_ = last_attempt_;
        break;
      }
      e.dropped = kind == verdict_kind::permanent;
      const std::optional<std::size_t> next = next_entry(*k + 1);
      if (!next || !time_for_another(round)) break;
      attempt_record& kept = summary_.items[*last_attempt_].attempts.back();
      kept.delay = duration{0};
      log_attempt(e, kept, "; next: [" + entries_[*next].item + "] at once");
      last_logged_ = true;
      if (scope.cancelled()) break;  // the line found the output closed
      k = next;
    }
    return last;
  }

  verdict verdict_of_round() const {
    if (winner_) return verdict::success();
    return next_entry(0) ? verdict::retryable() : verdict::permanent();
  }

  // The loop's record of the round: the wait before the next one, if any. The round's last
  // attempt gets its line now that the wait is known.
  void end_round(const attempt_record& round) {
    rounds_ = round.number;
    if (!last_attempt_) return;
    attempt_record& kept = summary_.items[*last_attempt_].attempts.back();
    kept.delay = round.delay;
    const std::size_t item = entry_of_[*last_attempt_];
    last_attempt_.reset();
    if (kept.result.ended == attempt_end::cancelled || last_logged_) return;
    if (round.delay) {
      const std::uint32_t max = ctx_.options.loop.policy.max_attempts;
      const std::string of = max != 0 ? fmt::format("/{}", max) : "";
      log_attempt(entries_[item], kept,
                  fmt::format("; next round ({}{}) in {}", round.number + 1, of,
                              seconds_text(*round.delay)));
    } else if (ctx_.options.log == command_options::log_level::verbose) {
      log_attempt(entries_[item], kept, winner_ ? ": done" : "");
    } else if (!winner_) {
      entries_[item].runner.said_cannot_run(kept.result);
    }
  }

  // The run's outcome and status, each item's, and the line saying why it ended.
  void finish(const loop_result& result, const cancel_scope& caller) {
    summary_.rounds = rounds_;
    const std::uint32_t max = ctx_.options.loop.policy.max_attempts;
    for (std::size_t i = 0; i < summary_.items.size(); ++i) {
      item_summary& item = summary_.items[i];
      item.result.attempts = static_cast<std::uint32_t>(item.attempts.size());
      item.result.last = item.attempts.back().result;
      if (winner_ == i) {
        item.result.why = outcome::succeeded;
      } else if (entries_[entry_of_[i]].dropped) {
        item.result.why = outcome::permanent;
      } else if (!winner_) {
        item.result.why = result.why;  // what ended the run ended every item's tries
      } else {
        // Failed, and another item succeeded: with no round left for it anyway, its attempts
        // were exhausted; otherwise the winner is why it was not tried again.
        item.result.why = outcome::attempts_exhausted;
        item.another_succeeded = max == 0 || item.result.attempts < max;
      }
    }
    if (winner_ && ctx_.options.verbose) {
      ctx_.log.line(
          fmt::format("{} succeeded in round {}", *summary_.items[*winner_].item, rounds_));
    }
    say_why_it_ended(result);
    if (stopped(summary_, caller, ctx_.log)) return;
    summary_.decisive = winner_;
    summary_.why = winner_ ? outcome::succeeded : result.why;
    summary_.status = winner_ ? 0 : result.last.status();
  }

 private:
  struct entry {
    item_runner runner;
    std::string item;
    bool dropped = false;                      // not retryable: no later round tries it
    std::optional<std::size_t> summary_index;  // in summary_.items, once tried
  };

  std::optional<std::size_t> next_entry(std::size_t from) const {
    for (std::size_t k = from; k < entries_.size(); ++k) {
      if (!entries_[k].dropped) return k;
    }
    return std::nullopt;
  }

  // A later item of a round starts only with minimum_left before the deadline.
  bool time_for_another(const attempt_info& round) {
    if (!round.deadline) return true;
    const duration left = *round.deadline - steady_now();
    if (left >= ctx_.options.loop.minimum_left) return true;
    cut_short_left_ = left;
    cut_short_round_ = round.number;
    return false;
  }

  std::size_t add_attempt(entry& e, const attempt_record& record) {
    if (!e.summary_index) {
      e.summary_index = summary_.items.size();
      item_summary fresh;
      fresh.item = e.item;
      fresh.started = true;
      summary_.items.push_back(std::move(fresh));
      entry_of_.push_back(static_cast<std::size_t>(&e - entries_.data()));
    }
    summary_.items[*e.summary_index].attempts.push_back(record);
    return *e.summary_index;
  }

  // An attempt's line: by default for a failure that something follows, with -v for all.
  void log_attempt(const entry& e, const attempt_record& record, const std::string& next) {
    if (e.runner.said_cannot_run(record.result)) return;
    if (ctx_.options.log == command_options::log_level::quiet) return;
    // Dropped by this attempt: an item is not tried after its failure that is not retryable.
    ctx_.log.line(e.runner.attempt_line(record) + (e.dropped ? "; not retryable" : "") + next);
  }

  void say_why_it_ended(const loop_result& result) {
    if (result.attempts == 0 && result.why == outcome::deadline_exceeded) {
      ctx_.log.line(no_attempt_made);  // always said: a run that does nothing says why
      return;
    }
    if (ctx_.options.log == command_options::log_level::quiet || winner_ ||
        result.why == outcome::cancelled) {
      return;
    }
    if (cut_short_round_) {
      ctx_.log.line(cut_short_left_ > duration{0}
                        ? fmt::format("giving up: only {} left before the deadline, less than the "
                                      "{} an attempt needs; round {} not finished",
                                      seconds_text(cut_short_left_),
                                      seconds_text(ctx_.options.loop.minimum_left),
                                      *cut_short_round_)
                        : "giving up: the deadline has come");
    } else if (result.why == outcome::attempts_exhausted) {
      ctx_.log.line("giving up: no rounds left");
    } else if (result.why == outcome::permanent) {
      ctx_.log.line("giving up: no item left whose failure is retryable");
    } else {
      ctx_.log.line(stop_reason(result));
    }
  }

  run_context& ctx_;
  run_summary& summary_;
  std::vector<entry> entries_;               // in round order
  std::vector<std::size_t> entry_of_;        // summary_.items[i] is entries_[entry_of_[i]]'s
  std::optional<std::size_t> winner_;        // in summary_.items
  std::optional<std::size_t> last_attempt_;  // the item whose attempt ended the round
  bool last_logged_ = false;                 // its line said what came next (a stop then came)
  std::optional<std::uint32_t> cut_short_round_;
  duration cut_short_left_{0};
  std::uint32_t rounds_ = 0;
};

// The library's names, except that "permanent" reads as what it means for a command.
std::string outcome_name(outcome why) {
  return why == outcome::permanent ? "not_retryable" : std::string(to_string(why));
}

}  // namespace

std::vector<std::string> substitute_item(const std::vector<std::string>& command,
                                         const std::string& item) {
  std::vector<std::string> out;
  out.reserve(command.size());
  for (const std::string& word : command) {
    std::string w;
    std::size_t from = 0;
    for (std::size_t at; (at = word.find("{}", from)) != std::string::npos; from = at + 2) {
      w.append(word, from, at - from);
      w += item;
    }
    w.append(word, from);
    out.push_back(std::move(w));
  }
  return out;
}

run_summary run_try(const command_options& options, const std::vector<std::string>& command,
                    const cancel_scope& scope, random_ref rng) {
  run_context ctx(options, command, scope);
  run_summary summary;
  summary.mode = "try";
  summary.command = command;
  summary.items.push_back(run_item(ctx, std::nullopt, ctx.log.scope(), rng));
  finish(summary, scope, ctx.log, summary.items.back());
  return summary;
}

run_summary run_forany(const command_options& options, const std::vector<std::string>& items,
                       const std::vector<std::string>& command, bool shuffle,
                       const cancel_scope& scope, random_ref rng) {
  run_context ctx(options, command, scope);
  const cancel_scope& run = ctx.log.scope();
  run_summary summary;
  summary.mode = "forany";
  summary.command = command;
  // ftsh: a random first item, then round-robin over all of them.
  std::size_t first = 0;
  if (shuffle && !items.empty()) {
    first = std::min(items.size() - 1,
                     static_cast<std::size_t>(uniform01(rng) * static_cast<double>(items.size())));
  }
  forany_rounds rounds(ctx, items, first, summary);
  const loop_result result = run_attempt_loop(
      options.loop, run, rng,
      [&](const attempt_info& round) { return rounds.run_round(round, run); },
      [&](const attempt_result&) { return rounds.verdict_of_round(); },
      [&](const attempt_record& round) { rounds.end_round(round); });
  rounds.finish(result, scope);
  return summary;
}

run_summary run_forall(const command_options& options, const std::vector<std::string>& items,
                       const std::vector<std::string>& command, std::size_t jobs,
                       const cancel_scope& scope, random_ref rng) {
  run_context ctx(options, command, scope);
  run_summary summary;
  summary.mode = "forall";
  summary.command = command;
  summary.items.resize(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) summary.items[i].item = items[i];

  cancel_scope siblings(ctx.log.scope());  // fail fast: the first failure cancels the rest
  std::mutex mutex;
  std::optional<std::size_t> first_failure;
  std::exception_ptr error;
  std::atomic<std::size_t> next{0};
  // Each item draws from its own stream, so its delays do not depend on thread timing.
  std::vector<std::uint64_t> seeds(items.size());
  for (auto& s : seeds) s = rng();

  const auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= items.size() || siblings.cancelled()) return;
      random_generator item_rng(seeds[i]);
      item_summary done;
      try {
        done = run_item(ctx, items[i], siblings, item_rng);
      } catch (...) {
        // The tool itself failed (no spool file, ...): stop the others, report it after the join.
        const std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
        siblings.cancel(SIGTERM);
        return;
      }
      const std::lock_guard lock(mutex);
      const bool failed = done.result.why != outcome::succeeded;
      summary.items[i] = std::move(done);
      if (failed && !first_failure && !ctx.log.scope().cancelled()) {
        first_failure = i;
        siblings.cancel(SIGTERM);
      }
    }
  };
  // As many at once as asked (-j 0: all) and as the descriptor limit allows; the rest wait their
  // turn. Said once: always when -j asked for more, with -v when it asked for all.
  const std::size_t wanted = jobs == 0 ? items.size() : std::min(jobs, items.size());
  const std::size_t per_attempt =
      descriptors_per_attempt(options.stdout_on_success, options.stdin_replay != nullptr);
  const descriptor_budget budget = current_descriptor_budget();
  const std::size_t threads = std::min(wanted, budget.commands_at_once(per_attempt));
  if (threads < wanted && (jobs != 0 || options.verbose)) {
    ctx.log.line(fmt::format(
        "{} items at once, not {}: the descriptor limit (ulimit -n {}, {} open) allows {} "
        "commands of {} descriptors each; the other items wait their turn",
        threads, wanted, budget.limit, budget.open, threads, per_attempt));
  }
  // No thread left (ulimit -u, memory): fewer workers, said once (workers.hpp).
  run_workers(threads, worker, [&](std::size_t got, const std::system_error& e) {
    ctx.log.line(fmt::format(
        "{} items at once, not {}: no thread left for more ({}); the other items wait their "
        "turn",
        got, threads, e.code().message()));
  });
  if (error) std::rethrow_exception(error);

  if (stopped(summary, scope, ctx.log)) return summary;
  if (first_failure) {
    summary.decisive = first_failure;
    summary.why = summary.items[*first_failure].result.why;
    summary.status = item_status(summary.items[*first_failure]);
    if (options.verbose) {
      ctx.log.line(items[*first_failure] + " failed; the others were stopped");
    }
  } else {
    summary.why = outcome::succeeded;
    summary.status = 0;
  }
  return summary;
}

nlohmann::json to_json(const run_summary& summary) {
  using nlohmann::json;
  json out;
  out["mode"] = summary.mode;
  out["command"] = summary.command;
  out["outcome"] = outcome_name(summary.why);
  out["status"] = summary.status;
  out["interrupted_by_signal"] =
      summary.interrupted == 0 ? json(nullptr) : json(summary.interrupted);
  if (summary.output_closed) out["output_closed"] = true;
  json items = json::array();
  for (const item_summary& item : summary.items) {
    json j;
    j["item"] = item.item ? json(*item.item) : json(nullptr);
    j["started"] = item.started;
    j["outcome"] = !item.started            ? json(nullptr)
                   : item.another_succeeded ? json("another_item_succeeded")
                                            : json(outcome_name(item.result.why));
    j["status"] = item.started ? json(item.result.last.status()) : json(nullptr);
    json attempts = json::array();
    for (const attempt_record& a : item.attempts) {
      const attempt_result& r = a.result;
      json aj;
      aj["attempt"] = a.number;
      aj["start"] = a.start_unix_s;
      aj["duration_s"] = to_seconds(r.elapsed);
      aj["ended"] = to_string(r.ended);
      aj["status"] = r.status();
      aj["exit_code"] = r.exit_code >= 0 ? json(r.exit_code) : json(nullptr);
      aj["signal"] = r.signal != 0 ? json(r.signal) : json(nullptr);
      aj["delay_s"] = a.delay ? json(to_seconds(*a.delay)) : json(nullptr);
      if (!r.error.empty()) aj["error"] = r.error;
      attempts.push_back(std::move(aj));
    }
    j["attempts"] = std::move(attempts);
    items.push_back(std::move(j));
  }
  if (summary.mode == "try") {
    out["attempts"] = items.at(0)["attempts"];
  } else {
    out["items"] = std::move(items);
    const char* key = summary.mode == "forany" ? "winner" : "first_failure";
    out[key] = summary.decisive ? json(*summary.items[*summary.decisive].item) : json(nullptr);
    if (summary.mode == "forany") out["rounds"] = summary.rounds;
  }
  return out;
}

}  // namespace backoff::tool
