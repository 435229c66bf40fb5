// SPDX-License-Identifier: Apache-2.0
// The ranking and its sentences (ranking.hpp): the figures of each strategy, the rule that orders
// them, and the answers to the three questions in plain text.
#include "ranking.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

#include "boundary.hpp"

namespace backoff::report {
namespace ranking_detail {

// The success rate at the precision the table shows (0.1 percentage point), so two strategies
// that read the same are ranked by what comes next, not by a difference nobody can see.
std::int64_t shown_success(double share) {
  return std::llround(share * 1000.0);
}

std::optional<double> mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// The attempts a run sent in the buckets that start inside [from, to) (seconds, or ticks).
std::optional<double> attempts_within(const strategy_summary& s,
                                      const std::optional<std::pair<double, double>>& window) {
  if (!window || s.bucket_width <= 0 || s.buckets.empty()) return std::nullopt;
  const double width = static_cast<double>(s.bucket_width) * s.seconds_per_unit;
  double sum = 0;
  for (std::size_t i = 0; i < s.buckets.size(); ++i) {
    const double start = static_cast<double>(i) * width;
    if (start >= window->first && start < window->second) {
      sum += static_cast<double>(s.buckets[i].attempts);
    }
  }
  return sum;
}

ranking_row row_of(const std::string& name, const std::vector<const strategy_summary*>& runs,
                   const std::optional<std::pair<double, double>>& outage_s) {
  ranking_row row;
  row.name = name;
  row.runs = runs.size();
  std::vector<double> success, attempts, p50, p99, max, recovery, in_outage;
  for (const strategy_summary* s : runs) {
    if (const auto sent = attempts_within(*s, outage_s)) in_outage.push_back(*sent);
    success.push_back(s->success_rate());
    attempts.push_back(s->attempts_per_operation);
    if (s->latency_s) {
      p50.push_back(s->latency_s->p50);
      p99.push_back(s->latency_s->p99);
      max.push_back(s->latency_s->max);
    }
    if (s->recovery_s) recovery.push_back(*s->recovery_s);
  }
  row.success = mean_of(success).value_or(0);
  row.attempts_per_operation = mean_of(attempts).value_or(0);
  row.p50 = mean_of(p50);
  row.p99 = mean_of(p99);
  row.max = mean_of(max);
  row.recovered_runs = recovery.size();
  row.recovery_s = mean_of(recovery);
  row.outage_attempts = mean_of(in_outage);
  return row;
}

// Runs recovered as a share, compared without division: a/b > c/d as a*d > c*b.
int compare_recovered(const ranking_row& a, const ranking_row& b) {
  const std::size_t left = a.recovered_runs * std::max<std::size_t>(b.runs, 1);
  const std::size_t right = b.recovered_runs * std::max<std::size_t>(a.runs, 1);
  return left > right ? -1 : (left < right ? 1 : 0);
}

std::string recovered_text(const ranking_row& row, const std::string& unit) {
  const std::string when =
      row.recovery_s ? fmt::format(" ({} {} after the outage{})", format_latency(*row.recovery_s),
                                   unit, row.runs > 1 ? ", mean" : "")
                     : "";
  if (row.runs > 1) {
    return fmt::format("{} in {} of {} runs{}", row.name, row.recovered_runs, row.runs, when);
  }
  return row.name + when;
}

std::string success_note(const ranking_row& row) {
  return fmt::format("{} % of operations succeeded", format_percent(row.success));
}

// The p99 for comparisons: none (nothing completed) is longer than any.
double p99_or_worst(const ranking_row& row) {
  return row.p99.value_or(std::numeric_limits<double>::infinity());
}

// `a` is at least as good as `b` on success (as shown), load and p99, and better on one.
bool dominates(const ranking_row& a, const ranking_row& b) {
  const std::int64_t sa = shown_success(a.success), sb = shown_success(b.success);
  const double la = a.attempts_per_operation, lb = b.attempts_per_operation;
  const double pa = p99_or_worst(a), pb = p99_or_worst(b);
  return sa >= sb && la <= lb && pa <= pb && (sa > sb || la < lb || pa < pb);
}

void mark_unbeaten(ranking& r) {
  for (auto& row : r.rows) {
    row.unbeaten = std::none_of(r.rows.begin(), r.rows.end(),
                                [&](const ranking_row& other) { return dominates(other, row); });
  }
}

std::string names_of(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : (i + 1 == names.size() ? " and " : ", ")) + names[i];
  }
  return out;
}

// Why the first is first, in the rule's words.
std::string recommendation(const ranking& r) {
  const ranking_row& first = r.rows.front();
  const std::vector<std::string> tied = tied_first(r);
  std::string who = first.name;
  if (tied.size() > 1) {
    who = names_of(tied) + " (alike within 5 %; " + first.name + " first by the rule)";
  }
  std::string why;
  if (r.outage && first.recovered_runs > 0) why = "it recovers after the outage, and ";
  if (near_best_success(first, r.best_success)) {
    why += r.rows.size() == 1
               ? "it is the only strategy"
               : fmt::format(
                     "it makes the fewest calls of the strategies within 1 point of the "
                     "best success ({} %)",
                     format_percent(r.best_success));
  } else {
    why += "it succeeds most often of the strategies that recover as often";
  }
  return fmt::format("Recommended: {}: {} ({} % succeeded, {} attempts per operation, p99 {}).",
                     who, why, format_percent(first.success),
                     format_attempts(first.attempts_per_operation),
                     first.p99 ? format_latency(*first.p99) + " " + r.unit : std::string("-"));
}

// The first makes more than twice the calls of the second: what it buys with them.
std::optional<std::string> trade_off(const ranking& r) {
  if (r.rows.size() < 2) return std::nullopt;
  const ranking_row& first = r.rows[0];
  const ranking_row& second = r.rows[1];
  if (!(first.attempts_per_operation > 2 * second.attempts_per_operation)) return std::nullopt;
  std::string buys;
  if (r.outage && compare_recovered(first, second) < 0) {
    buys = second.recovered_runs == 0
               ? "it recovers after the outage, and " + second.name + " does not"
               : "it recovers in more runs";
  } else {
    buys = fmt::format("{} % of operations succeed against {} %", format_percent(first.success),
                       format_percent(second.success));
  }
  const std::string ratio = second.attempts_per_operation > 0
                                ? fmt::format("{:.1f} times", first.attempts_per_operation /
                                                                  second.attempts_per_operation)
                                : std::string("more than twice");
  return fmt::format(
      "Trade-off: {} makes {} the calls of {} ({} against {} attempts per "
      "operation); what that buys: {}.",
      first.name, ratio, second.name, format_attempts(first.attempts_per_operation),
      format_attempts(second.attempts_per_operation), buys);
}

// An unbeaten strategy, as successful as the first, whose p99 is under half the first's: what the
// shorter tail costs in calls (hedging's trade, the other way round).
std::optional<std::string> tail_trade_off(const ranking& r) {
  const ranking_row& first = r.rows.front();
  if (!first.p99) return std::nullopt;
  const ranking_row* faster = nullptr;
  for (const auto& row : r.rows) {
    if (&row == &first || !row.unbeaten || !row.p99 || !(*row.p99 < *first.p99 / 2)) continue;
    if (!near_best_success(row, r.best_success)) continue;
    if (r.outage && compare_recovered(row, first) > 0) continue;
    if (faster == nullptr || *row.p99 < *faster->p99) faster = &row;
  }
  if (faster == nullptr) return std::nullopt;
  return fmt::format(
      "For a shorter tail: {} has p99 {} {} against {} {}, for {} attempts per "
      "operation against {}.",
      faster->name, format_latency(*faster->p99), r.unit, format_latency(*first.p99), r.unit,
      format_attempts(faster->attempts_per_operation),
      format_attempts(first.attempts_per_operation));
}

std::string unbeaten_sentence(const ranking& r) {
  std::vector<std::string> names;
  for (const auto& row : r.rows) {
    if (row.unbeaten) names.push_back(row.name);
  }
  if (names.size() == 1) {
    return "Unbeaten: " + names.front() +
           " is at least as good as every other strategy on success, load and p99 together.";
  }
  return "Unbeaten on success, load and p99 together (no other strategy is at least as good on "
         "all three): " +
         names_of(names) + ".";
}

void add_sentences(ranking& r) {
  if (r.rows.empty()) return;
  const double best_success = r.best_success;
  r.sentences.push_back(recommendation(r));
  if (auto t = trade_off(r)) r.sentences.push_back(std::move(*t));
  if (auto t = tail_trade_off(r)) r.sentences.push_back(std::move(*t));
  if (r.rows.size() > 1) r.sentences.push_back(unbeaten_sentence(r));

  // Fewest calls.
  const auto fewer = [](const ranking_row* a, const ranking_row& b) {
    return a == nullptr || b.attempts_per_operation < a->attempts_per_operation;
  };
  const ranking_row* fewest = nullptr;
  const ranking_row* fewest_good = nullptr;
  for (const auto& row : r.rows) {
    if (fewer(fewest, row)) fewest = &row;
    if (near_best_success(row, best_success) && fewer(fewest_good, row)) fewest_good = &row;
  }
  std::string calls =
      fmt::format("Fewest calls: {}, {} attempts per operation ({}).", fewest->name,
                  format_attempts(fewest->attempts_per_operation), success_note(*fewest));
  if (fewest_good != nullptr && fewest_good != fewest) {
    calls += fmt::format(
        " Among the strategies within 1 point of the best success ({} %): {}, {} attempts per "
        "operation.",
        format_percent(best_success), fewest_good->name,
        format_attempts(fewest_good->attempts_per_operation));
  }
  r.sentences.push_back(std::move(calls));

  // Shortest tail: p99 over the completed operations, so a strategy that gives up early looks
  // fast; the success rate beside it says so.
  const auto shorter = [](const ranking_row* a, const ranking_row& b) {
    return b.p99 && (a == nullptr || *b.p99 < *a->p99);
  };
  const ranking_row* shortest = nullptr;
  const ranking_row* shortest_good = nullptr;
  for (const auto& row : r.rows) {
    if (shorter(shortest, row)) shortest = &row;
    if (near_best_success(row, best_success) && shorter(shortest_good, row)) shortest_good = &row;
  }
  if (shortest == nullptr) {
    r.sentences.push_back("Shortest tail: none, no strategy completed an operation.");
  } else {
    std::string tail = fmt::format(
        "Shortest tail: {}, p99 latency {} {} over its completed operations ({}).", shortest->name,
        format_latency(*shortest->p99), r.unit, success_note(*shortest));
    if (shortest_good != nullptr && shortest_good != shortest) {
      tail +=
          fmt::format(" Among the strategies within 1 point of the best success: {}, p99 {} {}.",
                      shortest_good->name, format_latency(*shortest_good->p99), r.unit);
    }
    r.sentences.push_back(std::move(tail));
  }

  // Survives the outage: only a model with one.
  if (r.outage) {
    std::string recovers, stays;
    for (const auto& row : r.rows) {
      if (row.recovered_runs > 0) {
        recovers += (recovers.empty() ? "" : "; ") + recovered_text(row, r.unit);
      } else {
        stays += (stays.empty() ? "" : ", ") + row.name;
      }
    }
    if (recovers.empty()) {
      r.sentences.push_back(
          "Survives the outage: none; every strategy stays down to the end of "
          "the run.");
    } else {
      r.sentences.push_back("Survives the outage: " + recovers + "." +
                            (stays.empty() ? "" : " Stays down: " + stays + "."));
    }
  }
}

std::string unit_of(const strategy_summary& s) {
  return s.seconds_per_unit == 1.0 ? "ticks" : "s";
}

}  // namespace ranking_detail

std::string format_latency(double v) {
  if (!std::isfinite(v)) return "-";
  if (v == 0) return "0";
  if (std::fabs(v) >= 1000) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 0.001) return fmt::format("{:.3g}", v);
  return fmt::format("{:.2e}", v);
}

std::string format_percent(double share) {
  return fmt::format("{:.1f}", 100.0 * share);
}

std::string number_column::operator()(double v) const {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:.{}f}", v * scale, decimals);
}

namespace {

// The fewest decimals (at most four) that show every value exactly (loads such as 5 and 7.5);
// else the decimals that give the smallest non-zero value three significant digits.
int decimals_for(const std::vector<double>& shown) {
  for (int d = 0; d <= 4; ++d) {
    const double factor = std::pow(10.0, d);
    const bool exact = std::all_of(shown.begin(), shown.end(), [factor](double v) {
      return !std::isfinite(v) || std::fabs(std::round(v * factor) - v * factor) < 1e-9;
    });
    if (exact) return d;
  }
  double smallest = std::numeric_limits<double>::infinity();
  for (double v : shown) {
    if (std::isfinite(v) && v != 0) smallest = std::min(smallest, std::fabs(v));
  }
  if (!std::isfinite(smallest)) return 0;
  const int digits = 2 - static_cast<int>(std::floor(std::log10(smallest)));
  return std::clamp(digits, 0, 4);
}

}  // namespace

number_column time_column(const std::vector<double>& values, const std::string& unit) {
  number_column c;
  c.unit = unit;
  if (unit == "s") {
    double largest = 0;
    for (double v : values) {
      if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
    }
    if (largest > 0 && largest < 1e-3) {
      c = {1e6, "µs", 0};
    } else if (largest > 0 && largest < 1) {
      c = {1e3, "ms", 0};
    }
  }
  std::vector<double> shown;
  for (double v : values) shown.push_back(v * c.scale);
  c.decimals = decimals_for(shown);
  return c;
}

number_column plain_column(const std::vector<double>& values, std::string unit) {
  return {1, std::move(unit), decimals_for(values)};
}

std::string format_attempts(double v) {
  return fmt::format("{:.2f}", v);
}

bool near_best_success(const ranking_row& row, double best_success) {
  using ranking_detail::shown_success;
  return shown_success(row.success) + 10 >= shown_success(best_success);
}

bool ranks_before(const ranking_row& a, const ranking_row& b, bool outage, double best_success) {
  using namespace ranking_detail;
  if (outage) {
    if (const int c = compare_recovered(a, b); c != 0) return c < 0;
  }
  const bool a_near = near_best_success(a, best_success);
  if (a_near != near_best_success(b, best_success)) return a_near;
  const auto by_load_then_tail = [&]() -> std::optional<bool> {
    if (a.attempts_per_operation != b.attempts_per_operation) {
      return a.attempts_per_operation < b.attempts_per_operation;
    }
    if (p99_or_worst(a) != p99_or_worst(b)) return p99_or_worst(a) < p99_or_worst(b);
    return std::nullopt;
  };
  if (!a_near && shown_success(a.success) != shown_success(b.success)) {
    return shown_success(a.success) > shown_success(b.success);
  }
  return by_load_then_tail().value_or(false);
}

bool indistinguishable(const ranking_row& a, const ranking_row& b, bool outage) {
  using namespace ranking_detail;
  const auto close = [](double x, double y) {
    return std::abs(x - y) <= 0.05 * std::max(std::abs(x), std::abs(y));
  };
  if (outage && compare_recovered(a, b) != 0) return false;
  if (shown_success(a.success) != shown_success(b.success)) return false;
  if (a.p99.has_value() != b.p99.has_value()) return false;
  if (a.p99 && !close(*a.p99, *b.p99)) return false;
  return close(a.attempts_per_operation, b.attempts_per_operation);
}

std::vector<std::string> tied_first(const ranking& k) {
  std::vector<std::string> names;
  for (const auto& row : k.rows) {
    if (!names.empty() && !indistinguishable(k.rows.front(), row, k.outage)) break;
    names.push_back(row.name);
  }
  return names;
}

ranking rank_strategies(const ranking_input& strategies, bool outage,
                        const std::optional<std::pair<double, double>>& outage_s) {
  ranking r;
  r.outage = outage;
  for (const auto& [name, runs] : strategies) {
    if (runs.empty()) continue;
    r.unit = ranking_detail::unit_of(*runs.front());
    r.rows.push_back(ranking_detail::row_of(name, runs, outage_s));
  }
  for (const auto& row : r.rows) r.best_success = std::max(r.best_success, row.success);
  std::stable_sort(r.rows.begin(), r.rows.end(), [&r](const auto& a, const auto& b) {
    return ranks_before(a, b, r.outage, r.best_success);
  });
  ranking_detail::mark_unbeaten(r);
  ranking_detail::add_sentences(r);
  return r;
}

ranking rank_plain(const scenario_result& r) {
  ranking_input in;
  for (const auto& s : r.strategies) in.push_back({s.name, {&s}});
  return rank_strategies(in, r.outage, r.outage_s);
}

ranking rank_point(const scenario_result& r, const point_result& point) {
  ranking_input in;
  for (const auto& cell : point.strategies) {
    std::vector<const strategy_summary*> runs;
    for (std::size_t i = 0; i < cell.runs.size(); ++i) {
      if (i < cell.ran.size() && cell.ran[i] == 0) continue;  // not this shard's run
      runs.push_back(&cell.runs[i]);
    }
    in.push_back({cell.name, std::move(runs)});
  }
  // A sweep's points may move the outage (a swept outage key): no one window fits them all.
  return rank_strategies(in, r.outage);
}

std::string point_label(const point_result& point) {
  std::string out;
  for (const auto& [key, value] : point.params) {
    out += (out.empty() ? "" : ", ") + key + "=" + value.text;
  }
  return out.empty() ? "(replications only)" : out;
}

std::string verdict(const scenario_result& r) {
  if (!r.boundary.empty()) {
    if (const auto compared = map_comparisons(r); !compared.empty()) {
      std::string out;
      for (const auto& c : compared) out += (out.empty() ? "" : "; ") + c.sentence();
      return out;
    }
    const boundary_point* lowest = &r.boundary.front();
    for (const auto& b : r.boundary) {
      if (b.trigger < lowest->trigger) lowest = &b;
    }
    return fmt::format("{} boundary points; the lowest: trigger {} (between {} and {}) at load {}",
                       r.boundary.size(), format_latency(lowest->trigger),
                       format_latency(lowest->trigger_lo), format_latency(lowest->trigger_hi),
                       format_latency(lowest->load));
  }
  if (r.sweep) {
    std::map<std::string, std::size_t> firsts;
    std::vector<std::string> order;
    std::size_t points = 0, ties = 0;
    for (const auto& p : r.points) {
      const ranking k = rank_point(r, p);
      if (k.rows.empty()) continue;
      ++points;
      if (tied_first(k).size() > 1) {
        ++ties;
      } else if (firsts[k.rows.front().name]++ == 0) {
        order.push_back(k.rows.front().name);
      }
    }
    if (points == 0) return {};
    std::stable_sort(order.begin(), order.end(),
                     [&](const auto& a, const auto& b) { return firsts[a] > firsts[b]; });
    std::string out;
    for (std::size_t i = 0; i < order.size(); ++i) {
      out += fmt::format("{}{} of {} points: {}", i == 0 ? "ranked first at " : "; ",
                         firsts[order[i]], points, order[i]);
    }
    if (ties > 0) {
      out += fmt::format("{}{} of {} points: a tie at the top (alike within 5 %)",
                         out.empty() ? "" : "; ", ties, points);
    }
    return out;
  }
  const ranking k = rank_plain(r);
  if (k.rows.empty()) return {};
  const ranking_row& best = k.rows.front();
  std::string line =
      fmt::format("first: {} ({} % succeeded, p99 {}, {} attempts per operation)", best.name,
                  format_percent(best.success),
                  best.p99 ? format_latency(*best.p99) + " " + k.unit : std::string("-"),
                  format_attempts(best.attempts_per_operation));
  const std::vector<std::string> tied = tied_first(k);
  if (tied.size() > 1) {
    line += "; alike within 5 %: " +
            ranking_detail::names_of(std::vector<std::string>(tied.begin() + 1, tied.end()));
  }
  if (k.rows.size() > 1 && best.attempts_per_operation > 2 * k.rows[1].attempts_per_operation &&
      k.rows[1].attempts_per_operation > 0) {
    line +=
        fmt::format("; {:.1f} times the calls of {}",
                    best.attempts_per_operation / k.rows[1].attempts_per_operation, k.rows[1].name);
  }
  return line;
}

}  // namespace backoff::report
