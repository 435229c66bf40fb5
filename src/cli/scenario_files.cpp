#include "scenario_files.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backoff/error.hpp"
#include "commands.hpp"
#include "report/gnuplot.hpp"
#include "report/output_files.hpp"

namespace backoff::cli {
namespace {

// Async-signal-safe only: the first signal is a request the run polls; a second one means the
// user will not wait for the partial outputs.
extern "C" void on_stop_signal(int signo) {
  if (sim::interrupt_signal() != 0) ::_exit(128 + signo);
  sim::request_interrupt(signo);
}

}  // namespace

std::optional<std::uint64_t> memory_limit_option(const std::string& text, std::string& error) {
  if (text.empty()) return sim::default_memory_limit();
  std::string why;
  const auto bytes = sim::parse_size(text, why);
  if (!bytes) error = "--memory-limit: " + why;
  return bytes;
}

stop_signals::stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, &old_int_);
  ::sigaction(SIGTERM, &action, &old_term_);
}

stop_signals::~stop_signals() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
}

sim::scenario_source resolve_scenario(const std::string& arg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(arg, ec)) {
    std::ifstream in(arg, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw sim::scenario_error(arg + ": cannot read");
    return {arg, text.str()};
  }
  for (const auto& s : sim::builtin_scenarios()) {
    if (s.path == "builtin/" + arg + ".toml" || s.path == "builtin/" + arg) return s;
  }
  if (fs::is_directory(arg, ec)) {
    throw sim::scenario_error(arg +
                              ": is a folder, not a scenario file (a .toml file, or a "
                              "built-in name)");
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
