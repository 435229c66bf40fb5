// SPDX-License-Identifier: Apache-2.0
#include "distribution.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "backoff/spelling.hpp"
#include "report/hdr_histogram.hpp"
#include "report/hdr_log.hpp"

namespace backoff::systems {
namespace {

constexpr double longest_ns = 86'400e9;  // a day: far beyond any service time, far from overflow

time_ns to_time(double ns) {
  if (!(ns > 0)) return 0;
  return static_cast<time_ns>(std::min(ns, longest_ns) + 0.5);
}

struct kind_keys {
  std::string_view name;
  distribution_kind kind;
  std::array<std::string_view, 5> keys;  // the keys it takes (all required but the curve's)
};

constexpr std::array<kind_keys, 8> kinds{{
    {"constant", distribution_kind::constant, {"value"}},
    {"exponential", distribution_kind::exponential, {"mean"}},
    {"lognormal", distribution_kind::lognormal, {"median", "sigma"}},
    {"erlang", distribution_kind::erlang, {"k", "mean"}},
    {"pareto", distribution_kind::pareto, {"scale", "shape"}},
    {"uniform", distribution_kind::uniform, {"low", "high"}},
    {"empirical", distribution_kind::empirical, {"file"}},
    {"concurrency", distribution_kind::concurrency, {"base", "limit", "factor", "k", "tick"}},
}};

[[noreturn]] void bad(std::string_view spec, const std::string& why) {
  throw parse_error("distribution \"" + std::string(spec) + "\": " + why);
}

double duration_ns(std::string_view spec, const spec_argument& arg) {
  const duration d = spec_duration(spec, arg, "distribution");
  if (d.count() < 0) bad(spec, arg.key + " must not be negative");
  if (static_cast<double>(d.count()) > longest_ns) bad(spec, arg.key + " is more than a day");
  return static_cast<double>(d.count());
}

// The concurrency curve's tick: above 0 (no tick at all reads N once).
time_ns positive_tick(std::string_view spec, const spec_argument& arg) {
  const auto tick = static_cast<time_ns>(duration_ns(spec, arg));
  if (tick == 0) bad(spec, "tick must be above 0s (leave it out to read N once)");
  return tick;
}

double bounded(std::string_view spec, const spec_argument& arg, double low, double high,
               bool low_open) {
  const double v = spec_number(spec, arg, "distribution");
  if (!std::isfinite(v) || (low_open ? v <= low : v < low) || v > high) {
    bad(spec, arg.key + " must be " + (low_open ? "above " : "at least ") +
                  std::to_string(low).substr(0, std::to_string(low).find('.') + 2) +
                  " and at most " + std::to_string(high).substr(0, std::to_string(high).find('.')));
  }
  return v;
}

// The file an empirical(file=...) names: its value may be quoted.
std::filesystem::path file_of(const spec_argument& arg, const std::filesystem::path& folder) {
  std::string name = arg.value;
  if (name.size() >= 2 && (name.front() == '"' || name.front() == '\'') &&
      name.back() == name.front()) {
    name = name.substr(1, name.size() - 2);
  }
  std::filesystem::path p(name);
  return p.is_absolute() ? p : folder / p;
}

// Cumulative counts of the histogram's non-empty buckets, each at its bucket's middle value.
std::shared_ptr<const empirical_table> table_of(const report::hdr_histogram& h, double ns_per_unit,
                                                const std::string& file) {
  if (h.count() == 0) throw parse_error(file + ": no samples");
  auto t = std::make_shared<empirical_table>();
  std::uint64_t running = 0;
  double sum = 0;
  for (std::size_t i = 0; i < h.indices_used(); ++i) {
    const std::uint64_t n = h.count_at_index(i);
    if (n == 0) continue;
    running += n;
    const double middle = (static_cast<double>(h.lowest_equivalent(i)) +
                           static_cast<double>(h.highest_equivalent(i))) /
                          2.0 * ns_per_unit;
    sum += middle * static_cast<double>(n);
    t->cumulative.push_back(static_cast<double>(running) / static_cast<double>(h.count()));
    t->values.push_back(to_time(middle));
  }
  t->cumulative.back() = 1.0;
  t->samples = h.count();
  t->mean_ns = sum / static_cast<double>(h.count());
  return t;
}

std::shared_ptr<const empirical_table> read_csv_seconds(std::istream& in, const std::string& file) {
  // Nanoseconds up to a day, 3 significant digits: the precision `backoff load` keeps.
  report::hdr_histogram h(static_cast<std::int64_t>(longest_ns),
                          report::hdr_precision::significant_digits(3));
  std::string row;
  std::size_t line = 0;
  while (std::getline(in, row)) {
    ++line;
    if (!row.empty() && row.back() == '\r') row.pop_back();
    const auto first = row.find_first_not_of(" \t");
    if (first == std::string::npos || row[first] == '#') continue;
    const auto last = row.find_last_not_of(" \t");
    const std::string_view cell(row.data() + first, last - first + 1);
    double seconds = 0;
    const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), seconds);
    if (ec != std::errc{} || end != cell.data() + cell.size()) {
      if (line == 1 && h.count() == 0) continue;  // a header
      throw parse_error(file + ":" + std::to_string(line) +
                        ": expected a number of seconds, found \"" +
                        escape_controls(std::string(cell.substr(0, 40))) + "\"");
    }
    if (!std::isfinite(seconds) || seconds < 0 || seconds * 1e9 > longest_ns) {
      throw parse_error(file + ":" + std::to_string(line) + ": " + std::string(cell) +
                        " s is not a time from 0 to a day");
    }
    h.record(static_cast<std::int64_t>(seconds * 1e9 + 0.5));
  }
  return table_of(h, 1.0, file);
}

// tail(base=KIND, KIND's keys..., at1=F, time1=D, ...): the steps, and the base read as a spec
// of its own from the keys the steps do not take.
std::shared_ptr<const tail_steps> read_tail(std::string_view text, const spec_call& call,
                                            const std::filesystem::path& folder) {
  auto t = std::make_shared<tail_steps>();
  std::vector<const spec_argument*> at(tail_steps::most + 1, nullptr);
  std::vector<const spec_argument*> time(tail_steps::most + 1, nullptr);
  const spec_argument* base = nullptr;
  std::string base_keys;
  for (const spec_argument& arg : call.arguments) {
    const auto numbered = [&](std::string_view prefix) -> std::size_t {
      if (arg.key.size() != prefix.size() + 1 || arg.key.rfind(prefix, 0) != 0) return 0;
      const char digit = arg.key.back();
      return digit >= '1' && digit <= '8' ? static_cast<std::size_t>(digit - '0') : 0;
    };
    if (arg.key == "base") {
      base = &arg;
    } else if (const std::size_t i = numbered("at"); i > 0) {
      at[i] = &arg;
    } else if (const std::size_t j = numbered("time"); j > 0) {
      time[j] = &arg;
    } else {
      base_keys += (base_keys.empty() ? "" : ", ") + arg.key + "=" + arg.value;
    }
  }
  if (base == nullptr) bad(text, "tail needs base= (a kind, its keys beside it, or a duration)");
  const bool base_is_kind = std::any_of(kinds.begin(), kinds.end(),
                                        [&](const kind_keys& k) { return k.name == base->value; });
  try {
    t->base = parse_distribution(base_is_kind ? base->value + "(" + base_keys + ")" : base->value,
                                 folder);
  } catch (const parse_error& e) {
    bad(text, std::string("base: ") + e.what());
  }
  if (!base_is_kind && !base_keys.empty()) {
    bad(text, "base=" + base->value + " is a duration, so tail takes no " + base_keys +
                  " (its keys other than base, atN and timeN are the base kind's)");
  }
  for (std::size_t i = 1; i <= tail_steps::most; ++i) {
    if ((at[i] == nullptr) != (time[i] == nullptr)) {
      bad(text, "at" + std::to_string(i) + " and time" + std::to_string(i) + " go together");
    }
    if (at[i] == nullptr) continue;
    if (t->at.size() != i - 1) {
      bad(text, "steps are numbered from 1 without a gap: at" + std::to_string(i) + " without at" +
                    std::to_string(i - 1));
    }
    const double q = spec_fraction(text, *at[i], "distribution");
    if (!(q > 0 && q < 1)) bad(text, at[i]->key + " must be above 0% and below 100%");
    if (!t->at.empty() && q <= t->at.back()) {
      bad(text, at[i]->key + "=" + at[i]->value + " must be above at" + std::to_string(i - 1) +
                    "=" + at[i - 1]->value + " (the quantiles ascend)");
    }
    t->at.push_back(q);
    t->time.push_back(to_time(duration_ns(text, *time[i])));
  }
  if (t->at.empty()) bad(text, "tail needs at least one step: at1= and time1=");
  return t;
}

}  // namespace

std::shared_ptr<const empirical_table> read_empirical(const std::filesystem::path& file) {
  const std::string name = file.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw parse_error(name + ": not a readable file");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw parse_error(name + ": cannot be opened");
  // An interval log starts with its comment lines ("#[StartTime: ..."), a CSV with a number or a
  // header.
  std::string head;
  std::getline(in, head);
  in.seekg(0);
  if (head.rfind("#[", 0) != 0) return read_csv_seconds(in, name);
  // Interval logs are one line per second of a run: held whole only up to 256 MiB.
  constexpr std::uintmax_t largest_log = 256ULL << 20;
  if (std::filesystem::file_size(file, ec) > largest_log) {
    throw parse_error(name +
                      ": an interval log above 256 MiB; merge it first (HdrHistogram's "
                      "HistogramLogProcessor) or give a CSV of seconds");
  }
  std::ostringstream text;
  text << in.rdbuf();
  try {
    const report::hdr_histogram merged = report::merge_logs({report::parse_hdr_log(text.str())});
    return table_of(merged, 1e3, name);  // the log's values are microseconds
  } catch (const std::invalid_argument& e) {
    throw parse_error(name + ": " + e.what());
  }
}

distribution parse_distribution(std::string_view text, const std::filesystem::path& folder) {
  distribution d;
  d.text = std::string(text);
  // A bare duration is a constant.
  if (!text.empty() && text.find('(') == std::string_view::npos) {
    try {
      const duration v = parse_duration(text);
      if (v.count() < 0) bad(text, "a time must not be negative");
      d.a = static_cast<double>(v.count());
      return d;
    } catch (const parse_error&) {
      // Not a duration: read as a call, for its did-you-mean.
    }
  }
  const spec_call call = parse_spec_call(text, "distribution");
  if (call.name == "tail") {
    d.kind = distribution_kind::tail;
    d.steps = read_tail(text, call, folder);
    return d;
  }
  const auto* kind = std::find_if(kinds.begin(), kinds.end(),
                                  [&](const kind_keys& k) { return k.name == call.name; });
  if (kind == kinds.end()) {
    std::vector<std::string_view> names;
    for (const auto& k : kinds) names.push_back(k.name);
    bad(text, "unknown kind '" + call.name + "'" + did_you_mean(call.name, names) +
                  " (known: constant, exponential, lognormal, erlang, pareto, uniform, "
                  "empirical, concurrency, tail)");
  }
  d.kind = kind->kind;
  for (const spec_argument& arg : call.arguments) {
    if (std::find(kind->keys.begin(), kind->keys.end(), arg.key) == kind->keys.end()) {
      std::vector<std::string_view> known;
      for (auto k : kind->keys) {
        if (!k.empty()) known.push_back(k);
      }
      bad(text, call.name + " takes no '" + arg.key + "'" + did_you_mean(arg.key, known));
    }
  }
  const auto get = [&](std::string_view key) -> const spec_argument* {
    for (const auto& arg : call.arguments) {
      if (arg.key == key) return &arg;
    }
    return nullptr;
  };
  const auto need = [&](std::string_view key) -> const spec_argument& {
    const spec_argument* arg = get(key);
    if (arg == nullptr) bad(text, call.name + " needs " + std::string(key) + "=");
    return *arg;
  };
  switch (d.kind) {
    case distribution_kind::constant:
      d.a = duration_ns(text, need("value"));
      break;
    case distribution_kind::exponential:
      d.a = duration_ns(text, need("mean"));
      break;
    case distribution_kind::lognormal:
      d.a = duration_ns(text, need("median"));
      d.b = bounded(text, need("sigma"), 0, 10, false);
      break;
    case distribution_kind::erlang:
      d.k = static_cast<int>(bounded(text, need("k"), 1, 64, false));
      if (static_cast<double>(d.k) != spec_number(text, need("k"), "distribution")) {
        bad(text, "k must be a whole number");
      }
      d.a = duration_ns(text, need("mean"));
      break;
    case distribution_kind::pareto:
      d.a = duration_ns(text, need("scale"));
      d.b = bounded(text, need("shape"), 0, 100, true);
      break;
    case distribution_kind::uniform:
      d.a = duration_ns(text, need("low"));
      d.b = duration_ns(text, need("high"));
      if (d.b < d.a) bad(text, "high must not be below low");
      break;
    case distribution_kind::empirical:
      try {
        d.table = read_empirical(file_of(need("file"), folder));
      } catch (const parse_error& e) {
        bad(text, e.what());
      }
      break;
    case distribution_kind::concurrency:
      d.a = duration_ns(text, need("base"));
      if (const auto* limit = get("limit")) {
        d.curve.limit = static_cast<std::int64_t>(bounded(text, *limit, 0, 1e9, false));
      }
      if (const auto* factor = get("factor")) d.curve.factor = bounded(text, *factor, 0, 1e3, true);
      if (const auto* k = get("k")) d.curve.k = bounded(text, *k, 0, 1e9, true);
      if (const auto* tick = get("tick")) d.tick = positive_tick(text, *tick);
      break;
    case distribution_kind::tail:
      break;  // read above
  }
  return d;
}

time_ns distribution::sample(random_generator& g, std::int64_t in_service) const {
  switch (kind) {
    case distribution_kind::constant:
      return to_time(a);
    case distribution_kind::exponential:
      return to_time(exponential_variate(g, a));
    case distribution_kind::lognormal:
      return to_time(a * std::exp(b * standard_normal(g)));
    case distribution_kind::erlang: {
      // -log of a product of k uniforms, times mean / k (one log per draw).
      double product = 1.0;
      for (int i = 0; i < k; ++i) product *= 1.0 - uniform01(g);
      return to_time(-std::log(product) * a / static_cast<double>(k));
    }
    case distribution_kind::pareto:
      return to_time(a / std::pow(1.0 - uniform01(g), 1.0 / b));
    case distribution_kind::uniform:
      return to_time(uniform(g, a, b));
    case distribution_kind::empirical: {
      const double u = uniform01(g);
      const auto at = std::upper_bound(table->cumulative.begin(), table->cumulative.end(), u);
      const auto i = static_cast<std::size_t>(std::min<std::ptrdiff_t>(
          at - table->cumulative.begin(), static_cast<std::ptrdiff_t>(table->values.size()) - 1));
      return table->values[i];
    }
    case distribution_kind::concurrency:
      return to_time(seed_models::service_time(curve, a, in_service));
    case distribution_kind::tail: {
      // One draw picks the step (HedgingHelloWorldServer's `random < 1, < 5, < 10`, as quantiles
      // from the top); the base draws its own only below the first.
      const double u = uniform01(g);
      for (std::size_t i = steps->at.size(); i-- > 0;) {
        if (u >= steps->at[i]) return steps->time[i];
      }
      return steps->base.sample(g, in_service);
    }
  }
  return 0;
}

double distribution::mean_ns() const {
  switch (kind) {
    case distribution_kind::constant:
    case distribution_kind::exponential:
    case distribution_kind::erlang:
    case distribution_kind::concurrency:
      return a;
    case distribution_kind::lognormal:
      return a * std::exp(b * b / 2.0);
    case distribution_kind::pareto:
      return b > 1 ? a * b / (b - 1) : a * 10.0;  // no finite mean: a long tail, say 10 scales
    case distribution_kind::uniform:
      return (a + b) / 2.0;
    case distribution_kind::empirical:
      return table->mean_ns;
    case distribution_kind::tail: {
      double mean = steps->at.front() * steps->base.mean_ns();
      for (std::size_t i = 0; i < steps->at.size(); ++i) {
        const double next = i + 1 < steps->at.size() ? steps->at[i + 1] : 1.0;
        mean += (next - steps->at[i]) * static_cast<double>(steps->time[i]);
      }
      return mean;
    }
  }
  return a;
}

}  // namespace backoff::systems
