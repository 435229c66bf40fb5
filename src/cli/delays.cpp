// SPDX-License-Identifier: Apache-2.0
// `backoff delays`: prints the delay before each retry for a policy (SPEC 6.1), so a schedule can
// be seen, compared and plotted before it is used. --plot PREFIX also draws it with gnuplot
// (PREFIX.png/.svg and PREFIX-log.png/.svg), after printing as usual.
#include <fmt/format.h>

#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/policy.hpp"
#include "backoff/spec.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "report/output_files.hpp"
#include "report/plots.hpp"
#include "report/summary.hpp"
#include "report/text_table.hpp"

namespace backoff::cli {
namespace {

struct delays_options {
  std::string policy;
  std::uint32_t attempts = 10;
  std::uint32_t runs = 1;
  std::uint64_t seed = 1;
  std::string format = "table";
  std::string plot;  // file prefix; empty: no charts
};

// Run r's delays come from their own generator, derive_seed(seed, r): independent of the other
// runs, of --runs and of the output format (for_each_delay, the one sampling loop).
template <class Visit>
void each_delay(const delays_options& o, const backoff_policy& policy, std::uint32_t run,
                Visit&& visit) {
  for_each_delay(policy, derive_seed(o.seed, run), o.attempts, std::forward<Visit>(visit));
}

int print_delays(const delays_options& o, const backoff_policy& policy) {
  if (o.format == "csv") {
    std::string out = "run,attempt,delay_s\n";
    for (std::uint32_t run = 1; run <= o.runs; ++run) {
      std::uint32_t attempt = 0;
      each_delay(o, policy, run, [&](duration d) {
        fmt::format_to(std::back_inserter(out), "{},{},{}\n", run, ++attempt, seconds_text(d));
        if (out.size() > (1u << 16)) {
          std::cout << out;
          out.clear();
        }
      });
      if (!std::cout) break;  // stdout failed: the loop stops here, flush_stdout says why
    }
    std::cout << out;
    return flush_stdout("backoff delays") ? exit_ok : exit_failure;
  }

  constexpr std::uint64_t max_in_memory = 10'000'000;
  if (std::uint64_t{o.attempts} * o.runs > max_in_memory) {
    std::cerr << "backoff delays: --attempts x --runs = " << std::uint64_t{o.attempts} * o.runs
              << " is more than " << max_in_memory << " delays for --format " << o.format
              << "; use --format csv, which streams\n";
    return exit_usage;
  }
  std::vector<std::vector<duration>> delays(o.runs);
  for (std::uint32_t run = 1; run <= o.runs; ++run) {
    delays[run - 1].reserve(o.attempts);
    each_delay(o, policy, run, [&](duration d) { delays[run - 1].push_back(d); });
  }

  if (o.format == "json") {
    nlohmann::ordered_json doc;
    doc["policy"] = policy.to_string();
    doc["seed"] = o.seed;
    doc["attempts"] = o.attempts;
    auto& runs = doc["runs"] = nlohmann::ordered_json::array();
    for (const auto& run : delays) {
      auto row = nlohmann::ordered_json::array();
      for (duration d : run) row.push_back(to_seconds(d));
      runs.push_back(std::move(row));
    }
    std::cout << report::json_text(doc) << '\n';
    return flush_stdout("backoff delays") ? exit_ok : exit_failure;
  }

  // table: one row per attempt, one column per run, then the total wait.
  std::cout << "policy: " << policy.to_string() << "  (seed " << o.seed << ")\n";
  report::text_table table;
  auto& header = table.rows.emplace_back(std::vector<std::string>{"attempt"});
  for (std::uint32_t run = 1; run <= o.runs; ++run) {
    header.push_back(o.runs == 1 ? std::string("delay") : fmt::format("run {}", run));
  }
  std::vector<duration> totals(o.runs, duration{0});
  for (std::uint32_t a = 0; a < o.attempts; ++a) {
    std::vector<std::string> row{std::to_string(a + 1)};
    for (std::uint32_t run = 0; run < o.runs; ++run) {
      row.push_back(human_duration(delays[run][a]));
      totals[run] += delays[run][a];
    }
    table.rows.push_back(std::move(row));
  }
  std::vector<std::string> total_row{"total"};
  for (duration t : totals) total_row.push_back(human_duration(t));
  table.rows.push_back(std::move(total_row));
  std::cout << table.render();
  return flush_stdout("backoff delays") ? exit_ok : exit_failure;
}

// The same delays as printed.
int plot_delays(const delays_options& o, const backoff_policy& policy) {
  std::vector<std::vector<double>> delays(o.runs);
  for (std::uint32_t run = 1; run <= o.runs; ++run) {
    each_delay(o, policy, run, [&](duration d) { delays[run - 1].push_back(to_seconds(d)); });
  }
  try {
    report::write_delay_plots(delays, policy.to_string(), o.plot);
  } catch (const report::plot_error& e) {
    std::cerr << "backoff delays: " << e.what() << '\n';
    return exit_failure;
  } catch (const report::write_error& e) {
    std::cerr << "backoff delays: " << e.what() << '\n';
    return exit_failure;
  }
  return exit_ok;
}

int run_delays(const delays_options& o) {
  backoff_policy policy;
  try {
    policy = parse_policy(o.policy);
  } catch (const parse_error& e) {
    std::cerr << "backoff delays: " << e.what() << '\n';
    return exit_usage;
  }
  // A chart of more points than this is a black smear, and gnuplot takes long to draw it.
  constexpr std::uint64_t max_plotted = 100'000;
  if (!o.plot.empty() && std::uint64_t{o.attempts} * o.runs > max_plotted) {
    std::cerr << "backoff delays: --plot draws at most " << max_plotted
              << " delays (--attempts x --runs); got " << std::uint64_t{o.attempts} * o.runs
              << '\n';
    return exit_usage;
  }
  const int status = print_delays(o, policy);
  if (status != exit_ok || o.plot.empty()) return status;
  return plot_delays(o, policy);
}

}  // namespace

void setup_delays(CLI::App& app, int& status) {
  auto options = std::make_shared<delays_options>();
  CLI::App* cmd = app.add_subcommand("delays", "Print the delay before each retry for a policy");
  cmd->add_option("-p,--policy", options->policy,
                  "Policy spec, e.g. 'exponential(initial=50ms, max=30s, jitter=full)' or a "
                  "preset name such as gcp-iot (see 'backoff presets')")
      ->required();
  cmd->add_option("-n,--attempts", options->attempts, "Number of retries to show per run")
      ->check(whole_number())
      ->check(CLI::Range(1u, 100'000'000u))
      ->capture_default_str();
  cmd->add_option("-r,--runs", options->runs, "Independent runs (each with its own random stream)")
      ->check(whole_number())
      ->check(CLI::Range(1u, 100'000u))
      ->capture_default_str();
  cmd->add_option("-s,--seed", options->seed, "Random seed; the same seed gives the same delays")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("-f,--format", options->format, "Output format")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  cmd->add_option("--plot", options->plot,
                  "Also draw delay vs retry number with gnuplot: PREFIX.png and PREFIX.svg "
                  "(linear), PREFIX-log.png and PREFIX-log.svg (log scale)")
      ->type_name("PREFIX")
      ->check(not_empty("a file prefix"));
  cmd->callback([options, &status] { status = run_delays(*options); });
}

}  // namespace backoff::cli
