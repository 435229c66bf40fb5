// SPDX-License-Identifier: Apache-2.0
// The ranking and its sentences (ranking.hpp): the figures of each strategy, the rule that orders
// them, and the answers to the three questions in plain text.
#include "ranking.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

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

ranking_row row_of(const std::string& name, const std::vector<const strategy_summary*>& runs) {
  ranking_row row;
  row.name = name;
  row.runs = runs.size();
  std::vector<double> success, attempts, p50, p99, max, recovery;
  for (const strategy_summary* s : runs) {
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

// Strategies whose success reads within one percentage point of the best: those an SRE would
// consider at all when asking which is cheapest or fastest.
bool near_best(const ranking_row& row, double best_success) {
  return shown_success(row.success) + 10 >= shown_success(best_success);
}

std::string success_note(const ranking_row& row) {
  return fmt::format("{} % of operations succeeded", format_percent(row.success));
}

void add_sentences(ranking& r) {
  if (r.rows.empty()) return;
  double best_success = 0;
  for (const auto& row : r.rows) best_success = std::max(best_success, row.success);

  // Fewest calls.
  const auto fewer = [](const ranking_row* a, const ranking_row& b) {
    return a == nullptr || b.attempts_per_operation < a->attempts_per_operation;
  };
  const ranking_row* fewest = nullptr;
  const ranking_row* fewest_good = nullptr;
  for (const auto& row : r.rows) {
    if (fewer(fewest, row)) fewest = &row;
    if (near_best(row, best_success) && fewer(fewest_good, row)) fewest_good = &row;
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
    if (near_best(row, best_success) && shorter(shortest_good, row)) shortest_good = &row;
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

std::string format_attempts(double v) {
  return fmt::format("{:.2f}", v);
}

bool ranks_before(const ranking_row& a, const ranking_row& b, bool outage) {
  using namespace ranking_detail;
  if (outage) {
    if (const int c = compare_recovered(a, b); c != 0) return c < 0;
  }
  if (shown_success(a.success) != shown_success(b.success)) {
    return shown_success(a.success) > shown_success(b.success);
  }
  if (a.p99.has_value() != b.p99.has_value()) return a.p99.has_value();
  if (a.p99 && *a.p99 != *b.p99) return *a.p99 < *b.p99;
  return a.attempts_per_operation < b.attempts_per_operation;
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

ranking rank_strategies(const ranking_input& strategies, bool outage) {
  ranking r;
  r.outage = outage;
  for (const auto& [name, runs] : strategies) {
    if (runs.empty()) continue;
    r.unit = ranking_detail::unit_of(*runs.front());
    r.rows.push_back(ranking_detail::row_of(name, runs));
  }
  std::stable_sort(r.rows.begin(), r.rows.end(),
                   [outage](const auto& a, const auto& b) { return ranks_before(a, b, outage); });
  ranking_detail::add_sentences(r);
  return r;
}

ranking rank_plain(const scenario_result& r) {
  ranking_input in;
  for (const auto& s : r.strategies) in.push_back({s.name, {&s}});
  return rank_strategies(in, r.outage);
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
  return fmt::format("first: {} ({} % succeeded, p99 {}, {} attempts per operation)", best.name,
                     format_percent(best.success),
                     best.p99 ? format_latency(*best.p99) + " " + k.unit : std::string("-"),
                     format_attempts(best.attempts_per_operation));
}

}  // namespace backoff::report
