// SPDX-License-Identifier: Apache-2.0
// The advice that leads report.html (html_report.hpp), internal to the report layer: a plain
// run's ranking table, a sweep's ranking point by point, or a metastable map's boundary points,
// each with a note on how it was ranked and the answers the page lists beside the scenario's
// claim; and the per-service totals of a model with several services. Every text from the run
// goes through html_escape.
//
//   const plotting::report_advice a = plotting::advice_of(result);
//   if (!a.table.empty()) page += "<h2>" + plotting::html_escape(a.heading) + "</h2>\n" + a.table;
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "result.hpp"

namespace backoff::report::plotting {

// `s` as HTML text or attribute value: & < > " and ' escaped.
std::string html_escape(std::string_view s);

struct report_advice {
  std::string heading;               // e.g. "Which strategy"; empty when nothing ran
  std::string table;                 // HTML: the table and its rule; empty when it has no rows
  std::vector<std::string> answers;  // one sentence each, not escaped
};

report_advice advice_of(const scenario_result& r);

// A plain run of a model with several services (strategy_summary::services): a heading and one
// table per strategy of its services' totals (arrivals, attempts, load, rejections, peak in
// flight, p99); empty for other runs.
std::string services_html(const scenario_result& r);

}  // namespace backoff::report::plotting
