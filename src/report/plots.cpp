// SPDX-License-Identifier: Apache-2.0
#include "plots.hpp"

#include <string>
#include <vector>

#include "chart_choice.hpp"
#include "chart_script.hpp"
#include "html_report.hpp"

namespace backoff::report {

namespace fs = std::filesystem;

std::vector<std::string> write_plots(const scenario_result& r, const fs::path& dir,
                                     const report_inputs& inputs, const plot_options& options) {
  output_folder folder(dir, output_folder::manifest::add);
  std::vector<plotting::chart> charts;
  if (inputs.simulated != nullptr) plotting::twin_charts(r, *inputs.simulated, charts);
  for (plotting::chart& c : plotting::charts_of(r, dir)) charts.push_back(std::move(c));
  if (!charts.empty()) plotting::draw(charts, dir, options);
  std::vector<std::string> names;
  for (const auto& c : charts) {
    names.push_back(c.name);
    folder.adopt(c.name + ".png");
    folder.adopt(c.name + ".svg");
  }
  plotting::write_report(r, folder, inputs, charts);
  folder.finish();
  return names;
}

void write_delay_plots(const std::vector<std::vector<double>>& delays, const std::string& policy,
                       const fs::path& prefix, const plot_options& options) {
  // The user's folder: nothing is listed or removed there, only the four files are written.
  const output_folder folder(prefix.parent_path(), output_folder::manifest::none);
  const fs::path& dir = folder.dir();
  plotting::draw(plotting::delay_charts(delays, policy, prefix.filename().string()), dir, options);
}

}  // namespace backoff::report
