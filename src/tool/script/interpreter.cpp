// SPDX-License-Identifier: Apache-2.0
#include "interpreter.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>

#include "backoff/error.hpp"
#include "tool/attempt_loop.hpp"
#include "tool/deadline_env.hpp"
#include "tool/process.hpp"
#include "tool/run_output.hpp"
#include "tool/workers.hpp"

namespace backoff::tool::script {
namespace {

using variables = std::map<std::string, std::string, std::less<>>;

// A statement's failure to even start (an unset variable, a file that cannot be opened): status 1,
// as a shell gives.
constexpr int status_script_error = 1;
// The longest value a word may expand to (Linux takes at most 128 KiB per argument anyway).
constexpr std::size_t max_value_bytes = std::size_t{1} << 20;

std::string describe(const attempt_result& r) {
  switch (r.ended) {
    case attempt_end::exited:
      return fmt::format("exit status {}", r.exit_code);
    case attempt_end::signaled:
      return fmt::format("killed by signal {} (status {})", r.signal, r.status());
    case attempt_end::timed_out:
      return "stopped at the deadline (status 124)";
    case attempt_end::cancelled:
      return fmt::format("stopped (status {})", r.status());
    case attempt_end::not_found:
    case attempt_end::not_executable:
      return r.error;
  }
  return "?";
}

// Where statements run: the variables (a forall branch has its own copy), the deadline of the
// innermost `try for`, the scope that cancels them, and inside a try the attempt number.
struct frame {
  variables* vars;
  std::optional<duration> deadline;
  const cancel_scope* scope;
  random_ref rng;
  std::optional<std::uint32_t> attempt;
};

class interpreter {
 public:
  interpreter(const script& s, const script_options& options, run_output& out)
      : script_(s), options_(options), out_(out) {}

  script_result run_block(const block& statements, frame& f) {
    for (const statement& st : statements) {
      if (f.scope->cancelled()) return cancelled(f);
      const script_result r = std::visit([&](const auto& node) { return run(node, f); }, st.node);
      if (!r.ok) return r;  // ftsh's brittle groups: nothing after a failure runs
    }
    return {};
  }

 private:
  static script_result cancelled(const frame& f) {
    return {false, status_of_signal(f.scope->signal())};
  }

  void log(int line, const std::string& message) {
    out_.line(fmt::format("{}:{}: {}", script_.file, line, message));
  }

  // The tool's own failure at a statement, as FILE:LINE: message.
  [[noreturn]] void fail_at(int line, const std::exception& e) const {
    throw script_error(fmt::format("{}:{}: {}", script_.file, line, e.what()));
  }

  // nullopt (after logging why) when a variable is not set.
  std::optional<std::string> expand(const word& w, const frame& f, int line) {
    std::string out;
    const auto append = [&](std::string_view piece) {
      // `X=${X}${X}` thirty times would reach 16 GB; no command takes an argument of a MiB.
      if (piece.size() > max_value_bytes - out.size()) {
        log(line, "a value longer than 1 MiB (a variable that grows without bound?)");
        return false;
      }
      out += piece;
      return true;
    };
    for (const word_part& part : w.parts) {
      bool ok = true;
      if (!part.variable) {
        ok = append(part.text);
      } else if (const auto it = f.vars->find(part.text); it != f.vars->end()) {
        ok = append(it->second);
      } else if (f.attempt && part.text == "BACKOFF_ATTEMPT") {
        ok = append(std::to_string(*f.attempt));  // what the try's commands find in their env
      } else if (const auto env = environment_value(part.text)) {
        ok = append(*env);
      } else {
        log(line, "variable '" + part.text + "' is not set");
        return std::nullopt;
      }
      if (!ok) return std::nullopt;
    }
    return out;
  }

  std::optional<std::string> environment_value(std::string_view name) const {
    for (const std::string& e : options_.environment) {
      if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
        return e.substr(name.size() + 1);
      }
    }
    return std::nullopt;
  }

  // A list's items: a word that is just an unquoted variable gives its blank-separated fields
  // (`forany host in ${MIRRORS}`); any other word gives itself.
  std::optional<std::vector<std::string>> expand_items(const std::vector<word>& words,
                                                       const frame& f, int line) {
    std::vector<std::string> items;
    for (const word& w : words) {
      auto text = expand(w, f, line);
      if (!text) return std::nullopt;
      const bool split = w.parts.size() == 1 && w.parts[0].variable && !w.parts[0].quoted;
      if (!split) {
        items.push_back(std::move(*text));
        continue;
      }
      std::size_t i = 0;
      while (i < text->size()) {
        const std::size_t start = text->find_first_not_of(" \t\n", i);
        if (start == std::string::npos) break;
        const std::size_t end = text->find_first_of(" \t\n", start);
        items.push_back(text->substr(start, end == std::string::npos ? end : end - start));
        i = end == std::string::npos ? text->size() : end;
      }
    }
    return items;
  }

  script_result run(const command& c, frame& f) {
    launch_spec spec;
    for (const word& w : c.argv) {
      auto text = expand(w, f, c.line);
      if (!text) return {false, status_script_error};
      spec.argv.push_back(std::move(*text));
    }
    spec.environment = options_.environment;
    // First, so that the command's own redirections of 1 come after it and win.
    if (options_.command_stdout_fd != STDOUT_FILENO) {
      spec.descriptors.emplace_back(STDOUT_FILENO, options_.command_stdout_fd);
    }
    if (f.attempt) set_variable(spec.environment, "BACKOFF_ATTEMPT", std::to_string(*f.attempt));
    if (f.deadline) export_deadline(spec.environment, f.deadline);
    std::vector<int> opened;
    const auto close_opened = [&] {
      for (const int fd : opened) ::close(fd);
    };
    for (const redirect& r : c.redirects) {
      if (r.how == redirect::kind::duplicate) {
        // Only the standard three, or a descriptor an earlier redirection of this command set:
        // any other number is closed in the child, or one of the tool's own (not the script's).
        const bool set_earlier = std::any_of(spec.descriptors.begin(), spec.descriptors.end(),
                                             [&](const auto& d) { return d.first == r.other_fd; });
        const bool standard = r.other_fd <= 2 && ::fcntl(r.other_fd, F_GETFD) != -1;
        if (!set_earlier && !standard) {
          log(c.line, fmt::format("redirection '{}>&{}': descriptor {} is not open (only 0, 1, 2 "
                                  "and descriptors redirected earlier in the command)",
                                  r.fd, r.other_fd, r.other_fd));
          close_opened();
          return {false, status_script_error};
        }
        spec.descriptors.emplace_back(r.fd, r.other_fd);
        continue;
      }
      auto target = expand(r.target, f, c.line);
      if (!target) {
        close_opened();
        return {false, status_script_error};
      }
      int flags = O_CLOEXEC;
      if (r.how == redirect::kind::read) flags |= O_RDONLY;
      if (r.how == redirect::kind::write) flags |= O_WRONLY | O_CREAT | O_TRUNC;
      if (r.how == redirect::kind::append) flags |= O_WRONLY | O_CREAT | O_APPEND;
      const int fd = ::open(target->c_str(), flags, 0666);
      if (fd < 0) {
        log(c.line, "cannot open '" + *target + "': " + std::strerror(errno));
        close_opened();
        return {false, status_script_error};
      }
      opened.push_back(fd);
      spec.descriptors.emplace_back(r.fd, fd);
    }
    attempt_limits limits;
    limits.kill_at = f.deadline;
    limits.grace = options_.grace;
    attempt_result r;
    const duration started = steady_now();
    try {
      r = run_attempt(spec, limits, *f.scope);
    } catch (const std::exception& e) {
      close_opened();
      fail_at(c.line, e);
    } catch (...) {
      close_opened();
      throw;
    }
    close_opened();
    if (r.ended == attempt_end::not_found || r.ended == attempt_end::not_executable) {
      log(c.line, r.error);
    } else if (options_.verbose) {
      log(c.line, fmt::format("{}: {}", spec.argv[0], describe(r)));
    }
    if (events_ != nullptr) {
      script_event e;
      e.line = c.line;
      e.argv = spec.argv;
      e.status = r.status();
      e.start = started - start_;
      e.elapsed = steady_now() - started;
      record(std::move(e));
    }
    return {r.status() == 0, r.status()};
  }

  script_result run(const assignment& a, frame& f) {
    auto value = expand(a.value, f, a.line);
    if (!value) return {false, status_script_error};
    (*f.vars)[a.name] = std::move(*value);
    return {};
  }

  script_result run(const builtin& b, frame&) {
    return b.succeed ? script_result{} : script_result{false, 1};
  }

  script_result run(const try_block& t, frame& f) {
    loop_options loop;
    loop.policy.backoff = options_.policy;
    // ftsh: a bare `try` is one attempt; a time limit alone allows any number.
    loop.policy.max_attempts = t.times.value_or(t.within ? 0 : 1);
    loop.policy.max_elapsed = t.within.value_or(duration{0});
    loop.every = t.every;
    loop.outer_deadline = f.deadline;

    script_result body_result;
    const auto attempt = [&](const attempt_info& info) {
      const duration began = steady_now();
      frame inner = f;
      inner.deadline = info.deadline;
      inner.attempt = info.number;
      body_result = run_block(t.body, inner);
      // The block ends as a command would: with its status, or stopped.
      attempt_result r;
      r.elapsed = steady_now() - began;
      if (f.scope->cancelled()) {
        r.ended = attempt_end::cancelled;
        r.cancel_signal = f.scope->signal();
      } else if (body_result.status == status_timed_out && info.deadline &&
                 steady_now() >= *info.deadline) {
        r.ended = attempt_end::timed_out;
      } else {
        r.exit_code = body_result.status;
      }
      return r;
    };
    const auto classify = [](const attempt_result& r) {
      if (r.ended == attempt_end::cancelled) return verdict::permanent();
      return r.status() == 0 ? verdict::success() : verdict::retryable();
    };
    const auto observe = [&](const attempt_record& record) {
      if (events_ != nullptr) {
        script_event e;
        e.what = script_event::kind::attempt;
        e.line = t.line;
        e.attempt = record.number;
        e.status = record.result.status();
        e.elapsed = record.result.elapsed;
        e.start = steady_now() - record.result.elapsed - start_;
        e.delay = record.delay;
        this->record(std::move(e));
      }
      if (!options_.verbose) return;
      std::string message = fmt::format("try: attempt {} {}", record.number,
                                        record.result.status() == 0
                                            ? std::string("succeeded")
                                            : fmt::format("failed ({})", record.result.status()));
      if (record.delay) message += fmt::format("; next in {:.3f}s", to_seconds(*record.delay));
      log(t.line, message);
    };
    const loop_result result = run_attempt_loop(loop, *f.scope, f.rng, attempt, classify, observe);
    if (result.why == outcome::succeeded) return {};
    if (result.why == outcome::cancelled || f.scope->cancelled()) return cancelled(f);
    if (options_.verbose) {
      if (result.no_time_left) {
        log(t.line,
            fmt::format("try: time expired: the next wait would leave {:.3f}s before the "
                        "deadline, less than the {:.3f}s an attempt needs",
                        to_seconds(std::max(duration{0}, result.left - result.refused_delay)),
                        to_seconds(minimum_attempt_time)));
      } else {
        log(t.line, result.why == outcome::deadline_exceeded ? "try: time expired"
                                                             : "try: attempts exhausted");
      }
    }
    // The deadline left no attempt at all: like a command stopped at it.
    const int status = result.attempts == 0 ? status_timed_out : result.last.status();
    if (t.handler) return run_block(*t.handler, f);
    return {false, status};
  }

  script_result run(const loop& l, frame& f) {
    auto items = expand_items(l.items, f, l.line);
    if (!items) return {false, status_script_error};
    if (items->empty()) {
      // An empty list (a variable that expanded to nothing): forany has no item that succeeds.
      return l.how == loop::kind::any ? script_result{false, status_script_error} : script_result{};
    }
    switch (l.how) {
      case loop::kind::each:
        for (const std::string& item : *items) {
          (*f.vars)[l.variable] = item;
          const script_result r = run_block(l.body, f);
          if (!r.ok) return r;
        }
        return {};
      case loop::kind::any:
        return run_any(l, *items, f);
      case loop::kind::all:
        return run_all(l, *items, f);
    }
    return {};
  }

  script_result run_any(const loop& l, const std::vector<std::string>& items, frame& f) {
    std::size_t first = 0;
    if (options_.shuffle) {
      first =
          std::min(items.size() - 1,
                   static_cast<std::size_t>(uniform01(f.rng) * static_cast<double>(items.size())));
    }
    script_result last;
    for (std::size_t k = 0; k < items.size(); ++k) {
      (*f.vars)[l.variable] = items[(first + k) % items.size()];
      last = run_block(l.body, f);
      if (last.ok) return last;  // the variable keeps the winning item
      if (f.scope->cancelled()) return cancelled(f);
    }
    return last;
  }

  script_result run_all(const loop& l, const std::vector<std::string>& items, frame& f) {
    cancel_scope siblings(*f.scope);
    std::mutex mutex;
    std::optional<script_result> first_failure;
    std::exception_ptr error;  // the tool's own failure in a branch, rethrown after the join
    std::vector<std::uint64_t> seeds(items.size());
    for (auto& s : seeds) s = f.rng();
    const auto branch = [&](std::size_t i) {
      variables vars = *f.vars;  // a branch's assignments stay in the branch, as in ftsh
      vars[l.variable] = items[i];
      random_generator rng(seeds[i]);
      frame inner = f;
      inner.vars = &vars;
      inner.scope = &siblings;
      inner.rng = rng;
      script_result r;
      try {
        r = run_block(l.body, inner);
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
        siblings.cancel(SIGTERM);
        return;
      }
      if (r.ok) return;
      const std::lock_guard lock(mutex);
      if (!first_failure && !f.scope->cancelled()) {
        first_failure = r;
        siblings.cancel(SIGTERM);
      }
    };
    // Every branch at once, as ftsh; when the system refuses threads, fewer at once and the
    // others wait their turn, in order (workers.hpp). A branch not started when a failure (or a
    // signal) came never starts.
    std::atomic<std::size_t> next{0};
    run_workers(
        items.size(),
        [&] {
          for (std::size_t i; !siblings.cancelled() && (i = next.fetch_add(1)) < items.size();) {
            branch(i);
          }
        },
        [&](std::size_t got, const std::system_error& e) {
          log(l.line, fmt::format("forall: {} branches at once, not {}: no thread left for more "
                                  "({}); the other items wait their turn",
                                  got, items.size(), e.code().message()));
        });
    if (error) std::rethrow_exception(error);
    if (f.scope->cancelled()) return cancelled(f);
    return first_failure.value_or(script_result{});
  }

  void record(script_event e) {
    const std::lock_guard lock(events_mutex_);  // forall runs items on threads
    events_->push_back(std::move(e));
  }

 public:
  std::vector<script_event>* events_ = nullptr;

 private:
  const script& script_;
  const script_options& options_;
  run_output& out_;
  std::mutex events_mutex_;
  const duration start_ = steady_now();
};

}  // namespace

script_result run_script(const script& s, const script_options& options, const cancel_scope& scope,
                         random_ref rng, std::vector<script_event>* events) {
  run_output out(scope, options.message_prefix);  // cancelled too when our output is closed
  variables vars;
  frame top{&vars, std::nullopt, &out.scope(), rng, std::nullopt};
  interpreter run(s, options, out);
  run.events_ = events;
  script_result result = run.run_block(s.body, top);
  if (out.closed() && !scope.cancelled()) {
    result.ok = false;
    result.status = status_output_closed;
    result.output_closed = true;
  }
  return result;
}

}  // namespace backoff::tool::script
