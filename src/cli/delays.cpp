// SPDX-License-Identifier: Apache-2.0
// `backoff delays`: prints the delay before each retry for a policy (SPEC 6.1), so a schedule can
// be seen, compared and plotted before it is used. --plot PREFIX also draws it with gnuplot
// (PREFIX.png/.svg and PREFIX-log.png/.svg), after printing as usual.
#include <fmt/format.h>

#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
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
#include "typed_options.hpp"

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

// Run r's delays come from their own stream, delay_stream{policy, derive_seed(seed, r)}:
// independent of the other runs, of --runs and of the output format.
delay_stream run_stream(const delays_options& o, const backoff_policy& policy, std::uint32_t run) {
  return delay_stream{policy, derive_seed(o.seed, run)};
}

// Every format streams: the output is built in a buffer written out every 64 KiB, and nothing
// holds the delays, so memory does not grow with --attempts (the table keeps under 200 bytes per
// run: 100,000 runs take 24 MB; it held 240 bytes per delay before issue 40). Returns false once
// stdout failed (a closed pipe, a full disk): the loops stop there, and flush_stdout says why.
bool spill(std::string& out) {
  if (out.size() < (1u << 16)) return true;
  std::cout << out;
  out.clear();
  return static_cast<bool>(std::cout);
}

int finish(const std::string& out) {
  if (std::cout) std::cout << out;
  return flush_stdout("backoff delays") ? exit_ok : exit_failure;
}

int print_csv(const delays_options& o, const backoff_policy& policy) {
  std::string out = "run,attempt,delay_s\n";
  for (std::uint32_t run = 1; run <= o.runs; ++run) {
    delay_stream delays = run_stream(o, policy, run);
    for (std::uint32_t attempt = 1; attempt <= o.attempts; ++attempt) {
      fmt::format_to(std::back_inserter(out), "{},{},{}\n", run, attempt,
                     seconds_text(delays.next()));
      if (!spill(out)) return finish(out);
    }
  }
  return finish(out);
}

// The text report::json_text gives for {"policy", "seed", "attempts", "runs": [[seconds...]...]},
// written as the delays are drawn. Each number goes through nlohmann's own writer, so that it
// reads as report::json_text would write it ("5.0", its shortest round trip).
int print_json(const delays_options& o, const backoff_policy& policy) {
  using json = nlohmann::ordered_json;
  std::string out = "{\n  \"policy\": " + report::json_text(json(policy.to_string())) +
                    ",\n  \"seed\": " + report::json_text(json(o.seed)) +
                    ",\n  \"attempts\": " + report::json_text(json(o.attempts)) +
                    ",\n  \"runs\": [";
  for (std::uint32_t run = 1; run <= o.runs; ++run) {
    out += run == 1 ? "\n    [" : ",\n    [";
    delay_stream delays = run_stream(o, policy, run);
    for (std::uint32_t attempt = 1; attempt <= o.attempts; ++attempt) {
      out += attempt == 1 ? "\n      " : ",\n      ";
      out += report::json_text(json(to_seconds(delays.next())));
      if (!spill(out)) return finish(out);
    }
    out += "\n    ]";
  }
  out += "\n  ]\n}\n";
  return finish(out);
}

// One row per attempt, one column per run, then the total wait; columns as wide as their widest
// cell. A row needs every run's next delay, so each run keeps its own stream and all advance
// together; the widths come from a first pass over the same (deterministic) delays.
int print_table(const delays_options& o, const backoff_policy& policy) {
  std::vector<std::string> row{"attempt"};
  for (std::uint32_t run = 1; run <= o.runs; ++run) {
    row.push_back(o.runs == 1 ? std::string("delay") : fmt::format("run {}", run));
  }
  report::text_columns columns;
  columns.measure(0, row[0]);
  columns.measure(0, std::to_string(o.attempts));
  columns.measure(0, "total");
  std::vector<duration> totals(o.runs, duration{0});
  for (std::uint32_t run = 1; run <= o.runs; ++run) {
    columns.measure(run, row[run]);
    delay_stream delays = run_stream(o, policy, run);
    for (std::uint32_t attempt = 1; attempt <= o.attempts; ++attempt) {
      const duration d = delays.next();
      columns.measure(run, human_duration(d));
      totals[run - 1] += d;
    }
    columns.measure(run, human_duration(totals[run - 1]));
  }

  std::string out = "policy: " + policy.to_string() + "  (seed " + std::to_string(o.seed) + ")\n";
  columns.append_row(out, row);
  std::vector<delay_stream> streams;
  streams.reserve(o.runs);
  for (std::uint32_t run = 1; run <= o.runs; ++run) streams.push_back(run_stream(o, policy, run));
  for (std::uint32_t attempt = 1; attempt <= o.attempts; ++attempt) {
    row[0] = std::to_string(attempt);
    for (std::uint32_t run = 1; run <= o.runs; ++run) {
      row[run] = human_duration(streams[run - 1].next());
    }
    columns.append_row(out, row);
    if (!spill(out)) return finish(out);
  }
  row[0] = "total";
  for (std::uint32_t run = 1; run <= o.runs; ++run) row[run] = human_duration(totals[run - 1]);
  columns.append_row(out, row);
  return finish(out);
}

int print_delays(const delays_options& o, const backoff_policy& policy) {
  if (o.format == "csv") return print_csv(o, policy);
  if (o.format == "json") return print_json(o, policy);
  return print_table(o, policy);
}

// The same delays as printed.
int plot_delays(const delays_options& o, const backoff_policy& policy) {
  std::vector<std::vector<double>> delays(o.runs);
  for (std::uint32_t run = 1; run <= o.runs; ++run) {
    delay_stream stream = run_stream(o, policy, run);
    for (std::uint32_t attempt = 1; attempt <= o.attempts; ++attempt) {
      delays[run - 1].push_back(to_seconds(stream.next()));
    }
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
  add_count_option<std::uint32_t>(*cmd, "-n,--attempts", options->attempts,
                                  "Retries to show per run: retry n is the wait before attempt n + "
                                  "1 (so `try --times N` makes at most N - 1 of these waits)",
                                  1, 100'000'000)
      ->capture_default_str();
  add_count_option<std::uint32_t>(*cmd, "-r,--runs", options->runs,
                                  "Independent runs (each with its own random stream)", 1, 100'000)
      ->capture_default_str();
  add_seed_option(*cmd, "-s,--seed", options->seed,
                  "Random seed; the same seed gives the same delays")
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
