// SPDX-License-Identifier: Apache-2.0
#include "scenario_files.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backoff/error.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "report/gnuplot.hpp"
#include "report/output_files.hpp"
#include "sim/run/runner.hpp"
#include "tool/message_prefix.hpp"

namespace backoff::cli {
namespace {

// The command whose stop_signals lives ("sim", "sweep"), and the handler's line for it, chosen
// before the handler is installed: the handler only writes it.
std::string stopping_command;
tool::signal_safe_line interrupted_line;

// Async-signal-safe only; installed only while the runs' deferral lives (stop_signals). The first
// signal is a request the run polls (its partial outputs are written); a second one means the
// user will not wait for them. A signal in the instant after the last deferral ended, before the
// default action is back, exits as that action would.
extern "C" void on_stop_signal(int signo) {
  if (sim::interrupt_signal() != 0 || !sim::interrupts_deferred()) {
    interrupted_line.write_to(STDERR_FILENO);
    ::_exit(status_of_signal(signo));
  }
  sim::request_interrupt(signo);
}

}  // namespace

std::uint64_t memory_limit_or_default(const std::optional<std::uint64_t>& given) {
  return given ? *given : sim::default_memory_limit();
}

int interrupted_after_writing(int signo) {
  std::cerr << tool::message_prefix(stopping_command) << "interrupted ("
            << (signo == SIGINT ? "SIGINT" : "SIGTERM")
            << ") after the last run; its outputs are complete\n";
  return status_of_signal(signo);
}

namespace {

// The dispositions before the runs, put back after them.
struct sigaction before_int {};
struct sigaction before_term {};

void install_stop_handler() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, &before_int);
  ::sigaction(SIGTERM, &action, &before_term);
}

void restore_dispositions() {
  ::sigaction(SIGINT, &before_int, nullptr);
  ::sigaction(SIGTERM, &before_term, nullptr);
}

}  // namespace

stop_signals::stop_signals(std::string_view command) {
  stopping_command = command;
  interrupted_line.set(command, "interrupted");
  sim::on_deferral(install_stop_handler, restore_dispositions);
}

stop_signals::~stop_signals() {
  sim::on_deferral(nullptr, nullptr);
}

namespace {

// Scenario files are a few KiB; a larger one is a mistake (or /dev/zero), not a scenario.
constexpr std::size_t max_scenario_bytes = std::size_t{16} << 20;

std::string read_bounded(std::istream& in, const std::string& name) {
  bool too_large = false;
  std::string text = read_at_most(in, max_scenario_bytes, too_large);
  if (too_large) throw sim::scenario_error(name + ": larger than 16 MiB: not a scenario file");
  if (in.bad()) throw sim::scenario_error(name + ": cannot read");
  return text;
}

}  // namespace

sim::scenario_source resolve_scenario(const std::string& arg) {
  namespace fs = std::filesystem;
  if (arg == "-") return {"stdin", read_bounded(std::cin, "stdin")};
  std::error_code ec;
  const fs::file_type type = fs::status(arg, ec).type();
  // A file, or what a shell hands over as one: a pipe (`<(...)`, a FIFO) or /dev/stdin.
  if (type == fs::file_type::regular || type == fs::file_type::fifo ||
      type == fs::file_type::character) {
    std::ifstream in(arg, std::ios::binary);
    if (!in) throw sim::scenario_error(arg + ": cannot open: " + std::strerror(errno));
    return {arg, read_bounded(in, arg)};
  }
  for (const auto& s : sim::builtin_scenarios()) {
    if (s.path == "builtin/" + arg + ".toml" || s.path == "builtin/" + arg) return s;
  }
  if (type == fs::file_type::directory) {
    throw sim::scenario_error(arg +
                              ": is a folder, not a scenario file (a .toml file, or a "
                              "built-in name)");
  }
  if (type != fs::file_type::not_found && type != fs::file_type::none) {
    throw sim::scenario_error(arg + ": not a file, a pipe or '-': cannot read a scenario from it");
  }
  std::string known;
  for (const auto& s : sim::builtin_scenarios()) {
    const auto name = std::filesystem::path(s.path).stem().string();
    known += (known.empty() ? "" : ", ") + name;
  }
  throw sim::scenario_error(
      arg + ": no such file, and not a built-in scenario (built-in: " + known + ")");
}

int simulation_status(const char* who, const std::function<int()>& body) {
  try {
    return body();
  } catch (const sim::scenario_error& e) {
    std::cerr << who << ": " << e.what() << '\n';
    return exit_usage;
  } catch (const parse_error& e) {
    std::cerr << who << ": " << e.what() << '\n';
    return exit_usage;
  } catch (const sim::memory_limit_error& e) {
    std::cerr << who << ": " << e.what() << '\n';
    return exit_failure;
  } catch (const sim::instant_limit_error& e) {
    std::cerr << who << ": " << e.what() << '\n';
    return exit_failure;
  } catch (const report::plot_error& e) {
    std::cerr << who << ": " << e.what() << '\n';
    return exit_failure;
  } catch (const report::write_error& e) {
    std::cerr << who << ": " << e.what() << '\n';
    return exit_failure;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << who << ": " << e.what() << '\n';
    return exit_failure;
  }
}

}  // namespace backoff::cli
