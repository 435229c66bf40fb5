// SPDX-License-Identifier: Apache-2.0
#include "memory.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <thread>
#include <vector>

#include "backoff/duration.hpp"
#include "report/recorder.hpp"
#include "sim/engine/guard.hpp"
#include "sim/models/model.hpp"

namespace backoff::sim {
namespace {

constexpr std::uint64_t kib = 1024, mib = kib * 1024, gib = mib * 1024;

// A sweep held in memory keeps every run's summary (report::strategy_summary without its
// buckets, its name and its model fields); a spooled one only the points in flight.
constexpr double per_sweep_run = sizeof(report::strategy_summary) + 64;
// A run's model fields (name and value each, in a vector): most models report a few.
constexpr double per_model_field = sizeof(report::model_field) + 48;
constexpr double typical_fields = 4;
// A sweep held in memory is written whole: per point and strategy, summary.json's document (about
// fifty JSON values), its text, the sweep.csv row and the comparison table's row of cells.
// Measured with `backoff sim` on a 50,000-point mm1 sweep (docs/PERFORMANCE.md, "Sweep memory").
constexpr double per_written_cell = 4096;

struct term {
  double bytes = 0;
  std::string what;
};

std::uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  std::uint64_t bytes = pages > 0 && page > 0
                            ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                            : 0;
  // A container's limit (cgroup v2; "max" when there is none).
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::string text;
  if (cgroup >> text && !text.empty() && text != "max") {
    std::uint64_t limit = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), limit);
    if (ec == std::errc{} && limit > 0) bytes = bytes == 0 ? limit : std::min(bytes, limit);
  }
  return bytes;
}

}  // namespace

std::string format_size(std::uint64_t bytes) {
  const auto b = static_cast<double>(bytes);
  if (bytes >= gib) return fmt::format("{:.1f} GiB", b / static_cast<double>(gib));
  if (bytes >= mib) return fmt::format("{:.0f} MiB", b / static_cast<double>(mib));
  if (bytes >= kib) return fmt::format("{:.0f} KiB", b / static_cast<double>(kib));
  return fmt::format("{} B", bytes);
}

std::uint64_t default_memory_limit() {
  const std::uint64_t physical = physical_memory();
  if (physical == 0) return 8 * gib;
  return std::min(physical / 2, 8 * gib);
}

namespace {

constexpr double bucket_bytes = sizeof(report::series_bucket);

unsigned workers_for(unsigned threads, std::size_t runs) {
  const unsigned w = threads != 0 ? threads : std::max(1U, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::min<std::size_t>(w, std::max<std::size_t>(runs, 1)));
}

// A plain run's terms with `workers` of its strategies running at once.
std::vector<term> plain_terms(const memory_need& t, std::size_t strategies, unsigned workers) {
  std::vector<term> terms;
  terms.push_back({t.state_bytes * workers,
                   workers > 1 ? fmt::format("{}, on {} worker threads", t.state_what, workers)
                               : t.state_what});
  // Every strategy's series is kept until the outputs are written; each one being recorded may
  // be twice its size while its vector grows.
  const double sets = static_cast<double>(strategies + workers);
  terms.push_back({t.buckets * bucket_bytes * sets,
                   fmt::format("{}, for {} strategies", t.buckets_what, strategies)});
  return terms;
}

memory_estimate add_up(std::uint64_t baseline, const std::vector<term>& terms) {
  memory_estimate out;
  out.baseline = baseline;
  double total = static_cast<double>(baseline);
  const term* largest = nullptr;
  for (const auto& t : terms) {
    total += t.bytes;
    if (largest == nullptr || t.bytes > largest->bytes) largest = &t;
  }
  out.bytes = total < 0x1p63 ? static_cast<std::uint64_t>(total) : std::uint64_t{1} << 63;
  out.driver = largest != nullptr && !largest->what.empty() ? largest->what : "its model's state";
  return out;
}

// The most workers, up to `threads` (0: one per core) and one per strategy, whose estimate is
// within `limit` (0: none); at least one.
unsigned fitting_workers(const memory_need& t, std::size_t strategies, unsigned threads,
                         std::uint64_t baseline, std::uint64_t limit) {
  unsigned w = workers_for(threads, strategies);
  while (w > 1 && limit != 0 && add_up(baseline, plain_terms(t, strategies, w)).bytes > limit) {
    --w;
  }
  return w;
}

}  // namespace

unsigned plain_run_workers(scenario& sc, unsigned threads, std::uint64_t limit) {
  return fitting_workers(make_model(sc)->memory(), sc.strategies().size(), threads,
                         resident_bytes(), limit);
}

memory_estimate estimate_memory(scenario& sc, unsigned threads, std::uint64_t limit, bool spooled) {
  const std::uint64_t baseline = resident_bytes();
  if (!sc.is_sweep()) {
    const memory_need t = make_model(sc)->memory();
    const std::size_t n = sc.strategies().size();
    const unsigned workers = fitting_workers(t, n, threads, baseline, limit);
    memory_estimate e = add_up(baseline, plain_terms(t, n, workers));
    e.workers = workers;
    return e;
  }
  // Each worker holds one run at a time (its series is dropped after the run); the costliest
  // point sets the figure. Building each point's model checks the point too (and the scenario's
  // own, which the runner builds as well).
  (void)make_model(sc);
  const std::size_t points = sc.point_count();
  const std::size_t runs = points * sc.strategies().size() * sc.replications();
  const unsigned workers = workers_for(threads, runs);
  term state, series;
  for (std::size_t p = 0; p < points; ++p) {
    scenario at = sc.at(sc.point(p));
    const memory_need t = make_model(at)->memory();
    if (t.state_bytes >= state.bytes) state = {t.state_bytes, t.state_what};
    if (2 * t.buckets * bucket_bytes >= series.bytes) {
      series = {2 * t.buckets * bucket_bytes, t.buckets_what};
    }
  }
  const auto w = static_cast<double>(workers);
  const double run_bytes = per_sweep_run + typical_fields * per_model_field;
  const double per_point = static_cast<double>(sc.strategies().size() * sc.replications());
  const double cells = static_cast<double>(points * sc.strategies().size());
  std::vector<term> terms{
      {state.bytes * w, fmt::format("{}, on {} worker threads", state.what, workers)},
      {series.bytes * w, fmt::format("{}, on {} worker threads", series.what, workers)}};
  // Each worker thread's stack and malloc arena, as far as a run touches them (measured: a
  // million-point mm1 sweep on 2 threads peaks at 9.0 MiB, 2 MiB over what it held before).
  terms.push_back({w * static_cast<double>(mib),
                   fmt::format("the stacks and heaps of {} worker threads", workers)});
  if (spooled) {
    // Points leave for the spool in order: those started and the ones a slow point holds back.
    terms.push_back({(4 * w + 16) * per_point * run_bytes, "the points in flight"});
  } else {
    terms.push_back({static_cast<double>(runs) * run_bytes,
                     fmt::format("{} runs: {} points x {} strategies x replications = {}", runs,
                                 points, sc.strategies().size(), sc.replications())});
    terms.push_back({cells * per_written_cell,
                     fmt::format("the outputs of {} points x {} strategies, built in memory",
                                 points, sc.strategies().size())});
  }
  memory_estimate e = add_up(baseline, terms);
  e.workers = workers;
  return e;
}

void check_memory(scenario& sc, unsigned threads, std::uint64_t limit) {
  if (limit == 0) return;
  check_memory(sc, estimate_memory(sc, threads, limit), limit);
}

void check_memory(const scenario& sc, const memory_estimate& e, std::uint64_t limit) {
  if (limit == 0 || e.bytes <= limit) return;
  throw memory_limit_error(
      fmt::format("scenario '{}' would need about {} ({}); the limit is {} (--memory-limit)",
                  sc.name(), format_size(e.bytes), e.driver, format_size(limit)));
}

}  // namespace backoff::sim
