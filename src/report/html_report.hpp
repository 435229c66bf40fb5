// SPDX-License-Identifier: Apache-2.0
// report.html (plots.hpp), internal to the report layer: one self-contained page per run that
// leads with the advice (html_tables.hpp), puts our answers beside the scenario's claim, lists
// the run's facts, embeds every chart marked for it as an SVG data: URI, shows the services'
// totals of a model with several services, and ends with the comparison table and the
// scenario's source. The index of several reports is in the same file
// (write_report_index, plots.hpp), as it reads each report's verdict back.
//
//   std::vector<plotting::chart> charts = plotting::charts_of(result, dir);
//   plotting::draw(charts, dir, options);  // the SVGs the page embeds
//   plotting::write_report(result, folder, inputs, charts);
#pragma once

#include <vector>

#include "chart_script.hpp"
#include "output_files.hpp"
#include "plots.hpp"
#include "result.hpp"

namespace backoff::report::plotting {

// folder/report.html for `r`, embedding each chart with `embed` from its SVG in the folder.
void write_report(const scenario_result& r, output_folder& folder, const report_inputs& inputs,
                  const std::vector<chart>& charts);

}  // namespace backoff::report::plotting
