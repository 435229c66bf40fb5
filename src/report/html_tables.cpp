// SPDX-License-Identifier: Apache-2.0
#include "html_tables.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "boundary.hpp"
#include "chart_choice.hpp"
#include "ranking.hpp"

namespace backoff::report::plotting {

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// A table cell: text (escaped here) and whether it is a number (right-aligned).
struct html_cell {
  std::string text;
  bool number = false;
};

std::string html_table(std::string_view id, const std::vector<html_cell>& header,
                       const std::vector<std::vector<html_cell>>& rows) {
  std::string h = "<table class=\"ranking\" id=\"" + std::string(id) + "\">\n<thead><tr>";
  for (const auto& c : header) {
    h += std::string(c.number ? "<th class=\"num\">" : "<th>") + html_escape(c.text) + "</th>";
  }
  h += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    h += "<tr>";
    for (const auto& c : row) {
      h += std::string(c.number ? "<td class=\"num\">" : "<td>") + html_escape(c.text) + "</td>";
    }
    h += "</tr>\n";
  }
  return h + "</tbody>\n</table>\n";
}

std::string latency_cell(const std::optional<double>& v) {
  return v ? format_latency(*v) : "-";
}

std::string recovers_cell(const ranking_row& row) {
  if (row.runs > 1) return fmt::format("{} of {} runs", row.recovered_runs, row.runs);
  return row.recovered_runs > 0 ? "yes" : "no";
}

// The ranking of a plain run: its table and its answers.
std::string ranking_html(const ranking& k, std::vector<std::string>& answers) {
  std::vector<html_cell> header{{"#", true},
                                {"strategy"},
                                {"success %", true},
                                {"load x (attempts/op)", true},
                                {"p50 (" + k.unit + ")", true},
                                {"p99 (" + k.unit + ")", true},
                                {"max (" + k.unit + ")", true},
                                {"unbeaten"}};
  if (k.outage) header.push_back({"recovers"});
  std::vector<std::vector<html_cell>> rows;
  for (std::size_t i = 0; i < k.rows.size(); ++i) {
    const ranking_row& row = k.rows[i];
    std::vector<html_cell> cells{
        {std::to_string(i + 1), true},       {row.name},
        {format_percent(row.success), true}, {format_attempts(row.attempts_per_operation), true},
        {latency_cell(row.p50), true},       {latency_cell(row.p99), true},
        {latency_cell(row.max), true},       {row.unbeaten ? "yes" : "no"}};
    if (k.outage) cells.push_back({recovers_cell(row)});
    rows.push_back(std::move(cells));
  }
  answers = k.sentences;
  std::string rule = k.outage ? "runs that recovered after the outage (more first), then " : "";
  return html_table("ranking", header, rows) + "<p class=\"rule\">Ranked by " + html_escape(rule) +
         "success within 1 point of the best (those first, fewest attempts per operation "
         "first, then the lower p99), then the others by success, attempts per operation and "
         "p99. <em>Unbeaten</em>: no other strategy is at least as good on success, load and "
         "p99 together. Latency is over the completed operations; load x is attempts per "
         "operation (the <code>load</code> field).</p>\n";
}

// A sweep point's row: the top of its ranking (or the tie at the top), and over all its
// strategies the fewest calls and the shortest p99, each with its success.
std::vector<html_cell> sweep_point_row(const scenario_result& r, const point_result& p,
                                       const ranking& k) {
  const std::string& unit = k.unit;
  const ranking_row& first = k.rows.front();
  const ranking_row* fewest = &first;
  const ranking_row* shortest = nullptr;
  std::size_t recovering = 0;
  for (const auto& row : k.rows) {
    if (row.attempts_per_operation < fewest->attempts_per_operation) fewest = &row;
    if (row.p99 && (shortest == nullptr || *row.p99 < *shortest->p99)) shortest = &row;
    if (row.recovered_runs > 0) ++recovering;
  }
  const std::vector<std::string> tied = tied_first(k);
  std::string first_cell = first.name;
  if (tied.size() > 1) {
    first_cell = "tie: ";
    for (std::size_t i = 0; i < tied.size(); ++i) first_cell += (i ? ", " : "") + tied[i];
  }
  std::vector<html_cell> cells{
      {point_label(p)},
      {first_cell},
      {format_percent(first.success), true},
      {format_attempts(first.attempts_per_operation), true},
      {first.p99 ? format_latency(*first.p99) + " " + unit : "-", true},
      {fmt::format("{} ({}, {} %)", fewest->name, format_attempts(fewest->attempts_per_operation),
                   format_percent(fewest->success))},
      {shortest ? fmt::format("{} ({} {}, {} %)", shortest->name, format_latency(*shortest->p99),
                              unit, format_percent(shortest->success))
                : "-"}};
  if (r.outage) cells.push_back({fmt::format("{} of {} strategies", recovering, k.rows.size())});
  return cells;
}

// A sweep: the ranking at each point (its replications' means), the winner and the two answers.
std::string sweep_ranking_html(const scenario_result& r, std::vector<std::string>& answers) {
  std::vector<html_cell> header{{"point"},        {"first"},     {"success %", true},
                                {"load x", true}, {"p99", true}, {"fewest calls"},
                                {"shortest p99"}};
  if (r.outage) header.push_back({"recover"});
  std::vector<std::vector<html_cell>> rows;
  for (const auto& p : r.points) {
    const ranking k = rank_point(r, p);
    if (!k.rows.empty()) rows.push_back(sweep_point_row(r, p, k));
  }
  if (rows.empty()) return {};
  answers.push_back("Over the sweep: " + verdict(r) + ".");
  const std::string of = r.replications > 1
                             ? fmt::format("the means of its {} replications", r.replications)
                             : std::string("its run");
  return html_table("ranking", header, rows) +
         "<p class=\"rule\">Each row ranks the strategies at one point on " + html_escape(of) +
         (r.outage ? ": runs that recovered (more first), then" : ":") +
         " success within 1 point of the best (those first, fewest attempts per operation "
         "first, then the lower p99), then the others by success; <em>first</em> is the top of "
         "that ranking, with its success %, load x (attempts per operation) and p99 "
         "(a <em>tie</em> when the next ones have the same success and recovery and a p99 and "
         "attempts within 5 %: the order among them is then no advice). "
         "Fewest calls and shortest p99 are over all strategies at the point, with their "
         "success %.</p>\n";
}

// One map's answer: how many loads were mapped, the smallest trigger that keeps the system down
// where a load was bracketed, and the loads at either end of the trigger range.
std::string map_answer(const map_axes& m, const std::vector<const boundary_point*>& points) {
  const std::string unit = m.trigger_unit.empty() ? "" : " " + m.trigger_unit;
  const boundary_point* lowest = nullptr;
  std::size_t always = 0, never = 0;
  for (const boundary_point* b : points) {
    always += b->always_down ? 1 : 0;
    never += b->never_down ? 1 : 0;
    if (!b->always_down && !b->never_down && (lowest == nullptr || b->trigger < lowest->trigger))
      lowest = b;
  }
  std::string answer = fmt::format("{} ({}): {} loads mapped", m.mapped, m.strategy, points.size());
  if (lowest != nullptr) {
    answer += fmt::format(
        "; the smallest trigger that keeps it down is {}{} (between {} and {}) at {} = {}",
        format_latency(lowest->trigger), unit, format_latency(lowest->trigger_lo),
        format_latency(lowest->trigger_hi), m.load_key, format_latency(lowest->load));
  }
  if (always > 0) answer += fmt::format("; {} loads stay down after any trigger", always);
  if (never > 0) answer += fmt::format("; {} loads recover from every trigger tried", never);
  return answer + ".";
}

std::vector<html_cell> boundary_row(const map_axes& m, const boundary_point& b) {
  const std::string note = b.always_down  ? "always down (the smallest trigger tips it)"
                           : b.never_down ? "never down (the largest trigger recovers)"
                                          : "";
  return {{m.mapped},
          {m.strategy},
          {format_latency(b.load), true},
          {format_latency(b.trigger), true},
          {format_latency(b.trigger_lo), true},
          {format_latency(b.trigger_hi), true},
          {std::to_string(b.replications), true},
          {std::to_string(b.probes), true},
          {note}};
}

// A metastable map: its boundary points instead of a ranking (there is nothing to rank).
std::string boundary_html(const scenario_result& r, std::vector<std::string>& answers) {
  std::vector<std::vector<html_cell>> rows;
  for (const map_axes& m : maps_of(r)) {
    const auto points = points_of(r, m);
    if (points.empty()) continue;
    for (const boundary_point* b : points) rows.push_back(boundary_row(m, *b));
    answers.push_back(map_answer(m, points));
  }
  if (rows.empty()) return {};
  for (const map_comparison& c : map_comparisons(r)) {
    answers.push_back(c.sentence() + (c.example.empty() ? "" : " (" + c.example + ")") + ".");
  }
  std::string load = "load", trigger = "trigger";
  if (const auto maps = maps_of(r); maps.size() == 1) {
    load = axis_label(maps.front().load_key, maps.front().load_unit);
    trigger = axis_label(maps.front().trigger_key, maps.front().trigger_unit);
  }
  return html_table("boundary",
                    {{"mapped"},
                     {"strategy"},
                     {load, true},
                     {trigger + ": boundary", true},
                     {"recovers up to", true},
                     {"stays down from", true},
                     {"replications", true},
                     {"probes", true},
                     {"note"}},
                    rows) +
         "<p class=\"rule\">Each row is one base load: the bisection brackets the trigger "
         "between the largest seen to recover and the smallest seen to stay down (each probe "
         "run <em>replications</em> times); the boundary is their midpoint.</p>\n";
}

}  // namespace

report_advice advice_of(const scenario_result& r) {
  report_advice a;
  if (!r.boundary.empty()) {
    a.heading = "Where it tips";
    a.table = boundary_html(r, a.answers);
  } else if (r.sweep) {
    a.heading = "Which strategy, point by point";
    a.table = sweep_ranking_html(r, a.answers);
  } else if (!r.strategies.empty()) {
    a.heading = "Which strategy";
    a.table = ranking_html(rank_plain(r), a.answers);
  }
  return a;
}

}  // namespace backoff::report::plotting
