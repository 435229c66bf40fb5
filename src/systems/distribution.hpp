// SPDX-License-Identifier: Apache-2.0
// The distributions of the system model (docs/SYSTEMS.md, "Distributions"): how long a service
// works on a request, and how long a network hop takes. Written in the library's spec grammar
// (spec.hpp), or as a TOML table of the same keys ({ kind = "lognormal", median = "4ms", ... }) so
// that a knob can reach each number:
//
//   constant(value=5ms)                 always 5 ms (a bare duration, "5ms", says the same)
//   exponential(mean=2ms)               memoryless, mean 2 ms
//   lognormal(median=4ms, sigma=0.5)    median 4 ms, log-space spread sigma
//   erlang(k=5, mean=5ms)               a sum of k exponentials, mean 5 ms
//   pareto(scale=1ms, shape=1.5)        heavy tail: scale / U^(1 / shape)
//   uniform(low=1ms, high=3ms)
//   empirical(file="api.hlog")          measured: a `backoff load --histogram-log` file or a CSV
//                                       of seconds, one per line (relative paths: from the
//                                       scenario's folder); drawn by inverse CDF
//   concurrency(base=50ms, limit=30, factor=1.05, k=15)
//                                       smira's curve (2016): base while at most `limit` requests
//                                       are in service at the replica, base * factor^((N - limit)
//                                       / k) beyond (seed_models/service_time.hpp), N read once,
//                                       when the work starts
//   concurrency(..., tick=50ms)         the same, re-read every tick of the work with the N of
//                                       that moment, as smira's server (2016) does: a request in
//                                       service slows when others arrive (sim::concurrency_server
//                                       runs it; sample() then gives only the time at N)
//   tail(base=lognormal, median=4ms, sigma=0.5, at1=90%, time1=2s, at2=99%, time2=10s)
//                                       a measured tail over a base: one draw u in [0, 1); from
//                                       quantile at1 on (u >= at1) the time is time1, from at2
//                                       on time2, ...; below at1 the base's own draw. The base
//                                       is a kind whose keys sit beside it, or a duration
//                                       (base=0s); up to 8 steps, at ascending
//
//   const distribution d = parse_distribution("lognormal(median=4ms, sigma=0.5)", folder);
//   time_ns t = d.sample(rng, in_service);     // in_service: only the curve reads it
//
// A measured distribution is read in bounded memory: its samples go into an HDR histogram (3
// significant digits, as `backoff load` records them), and sampling walks the histogram's
// cumulative counts, whatever the number of samples.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/random.hpp"
#include "seed_models/service_time.hpp"

namespace backoff::systems {

// Nanoseconds from the start of a run: the simulator's clock (sim/engine/engine_types.hpp's
// time_ns is the same type), and a real tier's.
using time_ns = std::int64_t;

enum class distribution_kind : std::uint8_t {
  constant,
  exponential,
  lognormal,
  erlang,
  pareto,
  uniform,
  empirical,
  concurrency,
  tail
};

// A measured distribution: values (ns) at cumulative fractions, for inverse-CDF draws.
struct empirical_table {
  std::vector<double> cumulative;  // ascending, the last 1
  std::vector<time_ns> values;     // the value of each histogram bucket that holds samples
  std::uint64_t samples = 0;
  double mean_ns = 0;
};

struct tail_steps;

struct distribution {
  distribution_kind kind = distribution_kind::constant;
  double a = 0;      // ns: value, mean, median, scale, low, base
  double b = 0;      // ns or a number: high (ns), sigma, shape
  int k = 1;         // erlang
  time_ns tick = 0;  // concurrency: N re-read every tick of the work (0: read once, at its start)
  seed_models::service_curve curve;
  std::shared_ptr<const empirical_table> table;
  std::shared_ptr<const tail_steps> steps;  // tail
  std::string text;                         // as written, for messages and the report

  // One draw, in ns (at least 0, at most a day). `in_service`: requests in service at the
  // replica, this one included (the concurrency curve's N).
  time_ns sample(random_generator& g, std::int64_t in_service) const;
  // The mean at low load, in ns (for estimates: memory, the report's capacity line).
  double mean_ns() const;
};

// A tail's steps over its base: from quantile at[i] on, the time is time[i].
struct tail_steps {
  static constexpr std::size_t most = 8;
  distribution base;
  std::vector<double> at;     // ascending, in (0, 1)
  std::vector<time_ns> time;  // one per step
};

// Reads a spec; throws parse_error with one line quoting it. `folder`: where an empirical file's
// relative path starts.
distribution parse_distribution(std::string_view text, const std::filesystem::path& folder);

// A measured file's samples, in ns: an HDR interval log (`backoff load --histogram-log`,
// microseconds) or a CSV of seconds (one number per line; a header line is skipped). Throws
// parse_error naming the file and line.
std::shared_ptr<const empirical_table> read_empirical(const std::filesystem::path& file);

}  // namespace backoff::systems
