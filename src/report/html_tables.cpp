// SPDX-License-Identifier: Apache-2.0
#include "html_tables.hpp"

#include <fmt/format.h>

#include <algorithm>
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
  bool wraps = false;  // a list of names that may take two lines rather than widen the table
};

std::string html_table(std::string_view id, const std::vector<html_cell>& header,
                       const std::vector<std::vector<html_cell>>& rows) {
  // In a box of its own that scrolls sideways when the page is narrower than the table.
  std::string h =
      "<div class=\"table\"><table class=\"ranking\" id=\"" + std::string(id) + "\">\n<thead><tr>";
  for (const auto& c : header) {
    h += std::string(c.number ? "<th class=\"num\">" : "<th>") + html_escape(c.text) + "</th>";
  }
  h += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    h += "<tr>";
    for (const auto& c : row) {
      h += std::string(c.number  ? "<td class=\"num\">"
                       : c.wraps ? "<td class=\"wrap\">"
                                 : "<td>") +
           html_escape(c.text) + "</td>";
    }
    h += "</tr>\n";
  }
  return h + "</tbody>\n</table></div>\n";
}

// How long after the outage the strategy's goodput came back: "never" when no run recovered,
// the mean with the count when only some did.
std::string recovered_after_cell(const ranking_row& row, const number_column& column) {
  if (row.recovered_runs == 0 || !row.recovery_s) return "never";
  const std::string after = column(*row.recovery_s);
  if (row.recovered_runs < row.runs) {
    return fmt::format("{} ({} of {} runs)", after, row.recovered_runs, row.runs);
  }
  return after;
}

// The ranking of a plain run: its table and its answers.
std::string ranking_html(const ranking& k, std::vector<std::string>& answers) {
  // Each time column in one unit and format (time_column): the latencies, the recovery.
  const auto column_of = [&k](std::optional<double> ranking_row::*field) {
    std::vector<double> values;
    for (const auto& row : k.rows) {
      if (row.*field) values.push_back(*(row.*field));
    }
    return time_column(values, k.unit);
  };
  const number_column p50 = column_of(&ranking_row::p50), p99 = column_of(&ranking_row::p99),
                      max = column_of(&ranking_row::max),
                      recovery = column_of(&ranking_row::recovery_s);
  const auto cell = [](const number_column& c, const std::optional<double>& v) {
    return html_cell{v ? c(*v) : "-", true};
  };
  std::vector<html_cell> header{{"#", true},
                                {"strategy"},
                                {"success %", true},
                                {"load x (attempts/op)", true},
                                {"p50 (" + p50.unit + ")", true},
                                {"p99 (" + p99.unit + ")", true},
                                {"max (" + max.unit + ")", true},
                                {"unbeaten"}};
  const bool outage_work = std::any_of(k.rows.begin(), k.rows.end(),
                                       [](const ranking_row& row) { return row.outage_attempts; });
  if (k.outage) header.push_back({"recovered after (" + recovery.unit + ")", true});
  if (k.outage && outage_work) header.push_back({"calls during the outage", true});
  std::vector<std::vector<html_cell>> rows;
  for (std::size_t i = 0; i < k.rows.size(); ++i) {
    const ranking_row& row = k.rows[i];
    std::vector<html_cell> cells{{std::to_string(i + 1), true},
                                 {row.name},
                                 {format_percent(row.success), true},
                                 {format_attempts(row.attempts_per_operation), true},
                                 cell(p50, row.p50),
                                 cell(p99, row.p99),
                                 cell(max, row.max),
                                 {row.unbeaten ? "yes" : "no"}};
    if (k.outage) cells.push_back({recovered_after_cell(row, recovery), true});
    if (k.outage && outage_work) {
      cells.push_back(
          {row.outage_attempts ? fmt::format("{:.0f}", *row.outage_attempts) : "-", true});
    }
    rows.push_back(std::move(cells));
  }
  answers = k.sentences;
  std::string rule = k.outage ? "runs that recovered after the outage (more first), then " : "";
  return html_table("ranking", header, rows) + "<p class=\"rule\">Ranked by " + html_escape(rule) +
         "success within 1 point of the best (those first, fewest attempts per operation "
         "first, then the lower p99), then the others by success, attempts per operation and "
         "p99. <em>Unbeaten</em>: no other strategy is at least as good on success, load and "
         "p99 together. Latency is over the completed operations; load x is attempts per "
         "operation (the <code>load</code> field)." +
         std::string(k.outage ? " <em>Recovered after</em>: from the end of the outage until "
                                "goodput held at 90 % of its level before it; <em>calls during "
                                "the outage</em>: the attempts the clients sent while the "
                                "server was out, the work a guard should save."
                              : "") +
         "</p>\n";
}

// A sweep point's recovery: the strategies that never recovered, else the slowest to.
std::string recovery_cell(const std::vector<std::string>& never, const ranking_row* slowest,
                          const std::string& unit) {
  if (!never.empty()) {
    std::string names;
    for (const auto& n : never) names += (names.empty() ? "" : ", ") + n;
    return "never: " + names;
  }
  if (slowest == nullptr) return "-";
  return fmt::format("slowest {} ({} {})", slowest->name, format_latency(*slowest->recovery_s),
                     unit);
}

// A sweep point's row: the top of its ranking (or the tie at the top), and over all its
// strategies the fewest calls and the shortest p99, each with its success.
std::vector<html_cell> sweep_point_row(const scenario_result& r, const point_result& p,
                                       const ranking& k, const number_column& p99) {
  const std::string& unit = p99.unit;
  const ranking_row& first = k.rows.front();
  const ranking_row* fewest = &first;
  const ranking_row* shortest = nullptr;
  std::vector<std::string> never;
  const ranking_row* slowest = nullptr;
  for (const auto& row : k.rows) {
    if (row.attempts_per_operation < fewest->attempts_per_operation) fewest = &row;
    if (row.p99 && (shortest == nullptr || *row.p99 < *shortest->p99)) shortest = &row;
    if (row.recovered_runs == 0 || !row.recovery_s) {
      never.push_back(row.name);
    } else if (slowest == nullptr || *row.recovery_s > *slowest->recovery_s) {
      slowest = &row;
    }
  }
  const std::vector<std::string> tied = tied_first(k);
  std::string first_cell = first.name;
  if (tied.size() > 1) {
    first_cell = "tie: ";
    for (std::size_t i = 0; i < tied.size(); ++i) first_cell += (i ? ", " : "") + tied[i];
  }
  std::vector<html_cell> cells{
      {point_label(p)},
      {first_cell, false, tied.size() > 2},
      {format_percent(first.success), true},
      {format_attempts(first.attempts_per_operation), true},
      {first.p99 ? p99(*first.p99) + " " + unit : "-", true},
      {fmt::format("{} ({}, {} %)", fewest->name, format_attempts(fewest->attempts_per_operation),
                   format_percent(fewest->success))},
      {shortest ? fmt::format("{} ({} {}, {} %)", shortest->name, p99(*shortest->p99), unit,
                              format_percent(shortest->success))
                : "-"}};
  if (r.outage) cells.push_back({recovery_cell(never, slowest, k.unit)});
  return cells;
}

// A sweep: the ranking at each point (its replications' means), the winner and the two answers.
std::string sweep_ranking_html(const scenario_result& r, std::vector<std::string>& answers) {
  std::vector<html_cell> header{{"point"},        {"first"},     {"success %", true},
                                {"load x", true}, {"p99", true}, {"fewest calls"},
                                {"shortest p99"}};
  if (r.outage) header.push_back({"recovery"});
  std::vector<std::vector<html_cell>> rows;
  std::vector<std::pair<const point_result*, ranking>> ranked;
  std::vector<double> p99s;  // every p99 a row shows, for one format across the column
  std::string unit = "s";
  for (const auto& p : r.points) {
    ranking k = rank_point(r, p);
    if (k.rows.empty()) continue;
    unit = k.unit;
    for (const auto& row : k.rows) {
      if (row.p99) p99s.push_back(*row.p99);
    }
    ranked.emplace_back(&p, std::move(k));
  }
  const number_column p99 = time_column(p99s, unit);
  for (const auto& [p, k] : ranked) rows.push_back(sweep_point_row(r, *p, k, p99));
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

// The number columns of one boundary table: the load, and the trigger with its bracket (one
// format for the three, which hold the same quantity).
struct boundary_columns {
  number_column load, trigger;
};

std::vector<html_cell> boundary_row(const map_axes& m, const boundary_point& b,
                                    const boundary_columns& c) {
  const std::string note = b.always_down ? "always down" : b.never_down ? "never down" : "";
  return {{m.mapped},
          {m.strategy},
          {c.load(b.load), true},
          {c.trigger(b.trigger), true},
          {c.trigger(b.trigger_lo), true},
          {c.trigger(b.trigger_hi), true},
          {std::to_string(b.replications), true},
          {std::to_string(b.probes), true},
          {note}};
}

// One table per mapped scenario (its strategies together), so that each column holds one
// quantity in one unit.
std::string boundary_table(const scenario_result& r, const std::vector<map_axes>& group,
                           std::size_t index) {
  std::vector<double> loads, triggers;
  for (const map_axes& m : group) {
    for (const boundary_point* b : points_of(r, m)) {
      loads.push_back(b->load);
      triggers.insert(triggers.end(), {b->trigger, b->trigger_lo, b->trigger_hi});
    }
  }
  const boundary_columns columns{plain_column(loads), plain_column(triggers)};
  std::vector<std::vector<html_cell>> rows;
  for (const map_axes& m : group) {
    for (const boundary_point* b : points_of(r, m)) rows.push_back(boundary_row(m, *b, columns));
  }
  const map_axes& m = group.front();
  const std::string trigger = axis_label(m.trigger_key, m.trigger_unit);
  return html_table(index == 0 ? "boundary" : fmt::format("boundary-{}", index + 1),
                    {{"mapped"},
                     {"strategy"},
                     {axis_label(m.load_key, m.load_unit), true},
                     {"boundary: " + trigger, true},
                     {"recovers up to", true},
                     {"stays down from", true},
                     {"runs", true},
                     {"probes", true},
                     {"note"}},
                    rows);
}

// A metastable map: its boundary points instead of a ranking (there is nothing to rank).
std::string boundary_html(const scenario_result& r, std::vector<std::string>& answers) {
  const auto groups = phase_groups(r);
  if (groups.empty()) return {};
  std::string tables;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    for (const map_axes& m : groups[i]) answers.push_back(map_answer(m, points_of(r, m)));
    tables += boundary_table(r, groups[i], i);
  }
  for (const map_comparison& c : map_comparisons(r)) {
    answers.push_back(c.sentence() + (c.example.empty() ? "" : " (" + c.example + ")") + ".");
  }
  return tables +
         "<p class=\"rule\">Each row is one base load: the bisection brackets the trigger "
         "between the largest seen to recover and the smallest seen to stay down (each probe "
         "run <em>runs</em> times); the boundary is their midpoint. <em>Always down</em>: "
         "the smallest trigger tried tips it; <em>never down</em>: it recovers from the "
         "largest.</p>\n";
}

// A model field of `s` by its full name; none when absent or null.
std::optional<double> field_named(const strategy_summary& s, const std::string& name) {
  for (const auto& f : s.fields) {
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

// One strategy's services: their totals from its fields (services.NAME.x), one row per service.
std::string services_table(const strategy_summary& s, std::size_t index) {
  const auto value = [&s](const service_series& series, std::string_view what) {
    return field_named(s, "services." + series.service + "." + std::string(what));
  };
  std::vector<double> p99s;
  for (const service_series& series : s.services) {
    if (const auto p99 = value(series, "latency_s.p99")) p99s.push_back(*p99);
  }
  const number_column p99 = time_column(p99s, "s");
  const auto count = [&](const service_series& series, std::string_view what) {
    const auto v = value(series, what);
    return html_cell{v ? fmt::format("{:.0f}", *v) : "-", true};
  };
  std::vector<std::vector<html_cell>> rows;
  for (const service_series& series : s.services) {
    const auto amplification = value(series, "amplification");
    const auto p99_value = value(series, "latency_s.p99");
    rows.push_back({{series.service},
                    count(series, "arrivals"),
                    count(series, "attempts"),
                    {amplification ? format_attempts(*amplification) : "-", true},
                    count(series, "rejected"),
                    count(series, "peak_in_flight"),
                    {p99_value ? p99(*p99_value) : "-", true}});
  }
  return html_table(fmt::format("services-{}", index + 1),
                    {{"service"},
                     {"arrivals", true},
                     {"attempts", true},
                     {"load x (attempts/op)", true},
                     {"rejected", true},
                     {"peak in flight", true},
                     {"p99 (" + p99.unit + ")", true}},
                    rows);
}

}  // namespace

std::string services_html(const scenario_result& r) {
  std::string tables;
  std::size_t services = 0;
  for (std::size_t i = 0; i < r.strategies.size(); ++i) {
    const strategy_summary& s = r.strategies[i];
    if (s.services.empty()) continue;
    services = std::max(services, s.services.size());
    tables += "<h3>" + html_escape(s.name) + "</h3>\n" + services_table(s, i);
  }
  if (tables.empty()) return {};
  std::string rule =
      "Per service, over the run: arrivals are the first attempts of the calls to it, attempts "
      "every request that reached it (retries included), load x its attempts per client "
      "operation, rejected those refused, shed or dropped without service, peak in flight the "
      "most it held at once, p99 the latency of its successful answers.";
  if (services > max_charted_services) {
    rule += fmt::format(" The charts show the first {} of {} services; services.csv has all.",
                        max_charted_services, services);
  }
  return "<h2 id=\"services\">Services</h2>\n" + tables + "<p class=\"rule\">" + html_escape(rule) +
         "</p>\n";
}

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
