// SPDX-License-Identifier: Apache-2.0
#include "load_system.hpp"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <set>
#include <stdexcept>

#include "backoff/error.hpp"
#include "commands.hpp"
#include "experiments/system_load.hpp"
#include "output.hpp"
#include "report/output_files.hpp"
#include "report/plots.hpp"
#include "report/summary.hpp"
#include "report/twin_comparison.hpp"
#include "scenario_files.hpp"

namespace backoff::cli {
namespace {

std::atomic<int> stop_signal{0};
extern "C" void on_system_load_signal(int signo) {
  stop_signal = signo;
}

// load's flags that mean something beside --system; every other is the file's to say.
const std::set<std::string, std::less<>> flags_with_a_system = {
    "--system", "--set", "--seed", "--out", "--plot", "--compare", "--help"};

void write_comparison_file(report::output_folder& folder,
                           const std::vector<report::twin_row>& rows) {
  report::atomic_file file = folder.create("comparison.csv");
  report::write_comparison_csv(rows, file.stream());
  file.commit();
}

}  // namespace

void add_system_flags(CLI::App* sub, system_flags& f) {
  sub->add_option("--system", f.system,
                  "Run a system file (model = \"system\", docs/SYSTEMS.md), or a built-in one, "
                  "for real: each replica of each service a server on loopback, each client "
                  "group real callers, each strategy against fresh servers; the simulator's "
                  "outputs with real figures");
  sub->add_option("--set", f.sets,
                  "With --system: override a key of the file by its dotted path, e.g. --set "
                  "run.duration=20s (repeatable)");
  sub->add_flag("--compare", f.compare,
                "With --system: also simulate the same scenario and seed, print how far real and "
                "simulated are apart, and with --out write simulated/ and comparison.csv");
  sub->add_flag("--plot", f.plot,
                "With --system and --out: also draw the charts and report.html (gnuplot)");
}

int load_a_system(const system_flags& f, const CLI::App& load, std::optional<std::uint64_t> seed,
                  const std::optional<std::string>& out) {
  const auto refuse = [](const std::string& why) {
    std::cerr << "backoff load: " << escape_controls(why) << '\n';
    return exit_usage;
  };
  for (const CLI::Option* o : load.get_options()) {
    if (o->count() == 0 || flags_with_a_system.contains(o->get_name())) continue;
    return refuse(fmt::format(
        "{}: not with --system (the file's [[clients]], [service.*] and [[strategy]] say it; "
        "change it with --set KEY=VALUE)",
        o->get_name()));
  }
  if (!f.system) return refuse("--set, --compare and --plot go with --system SCENARIO");
  if (f.plot && !out) return refuse("--plot needs --out DIR, where the charts and report.html go");
  raise_descriptor_limit();
  net::system_load_result both;
  sim::scenario_source source;
  try {
    source = resolve_scenario(*f.system);
    net::system_load_options o;
    o.progress = [](const std::string& line) { std::cout << escape_controls(line) << std::endl; };
    o.stop = [] { return stop_signal.load() != 0; };
    o.compare = f.compare;
    std::signal(SIGINT, on_system_load_signal);
    std::signal(SIGTERM, on_system_load_signal);
    both = net::run_system_load(source, f.sets, seed, o);
    if (both.real.stopped) both.real.stopped->signal = stop_signal.load();
  } catch (const config::config_error& e) {
    return refuse(fmt::format("--system: {}", e.what()));
  } catch (const parse_error& e) {
    return refuse(fmt::format("--system: {}", e.what()));
  } catch (const std::exception& e) {
    std::cerr << "backoff load: --system: " << escape_controls(e.what()) << '\n';
    return exit_failure;
  }
  const report::scenario_result& result = both.real;
  std::vector<report::twin_row> rows;
  std::cout << report::comparison_table(result);
  if (both.simulated) {
    rows = report::compare_twins(*both.simulated, result);
    std::cout << "\nsimulated, same scenario and seed:\n"
              << report::comparison_table(*both.simulated) << "\nreal against simulated:\n"
              << report::agreement_table(rows);
  }
  if (!flush_stdout("backoff load")) return exit_failure;
  if (out) {
    try {
      report::output_folder folder(*out);
      if (both.simulated) {
        report::output_folder simulated(folder.subfolder("simulated"));
        report::write_run_files(*both.simulated, simulated);
        write_comparison_file(folder, rows);
      }
      report::write_run_files(result, folder);
      if (f.plot && !result.stopped) {
        report::report_inputs inputs{source.path, source.text, f.sets};
        if (both.simulated) inputs.simulated = &*both.simulated;
        (void)report::write_plots(result, folder.dir(), inputs);
      }
    } catch (const report::write_error& e) {
      std::cerr << "backoff load: " << e.what() << '\n';
      return exit_failure;
    } catch (const report::plot_error& e) {
      std::cerr << "backoff load: --plot: " << escape_controls(e.what()) << '\n';
      return exit_failure;
    }
  }
  if (result.stopped) {
    std::cerr << "backoff load: " << report::describe(*result.stopped) << "; "
              << (out ? "partial outputs written to " + escape_controls(*out)
                      : std::string("partial results above"))
              << '\n';
    return status_of_signal(result.stopped->signal != 0 ? result.stopped->signal : SIGINT);
  }
  return exit_ok;
}

}  // namespace backoff::cli
