// SPDX-License-Identifier: Apache-2.0
// The one place backoff starts gnuplot. Charts are drawn in a scratch folder inside the output
// folder: the script names only files relative to it (chart-N.dat, chart-N.png), so no path or
// name of the user's is ever part of gnuplot code, and finished files are renamed into place on
// the same file system.
//
//   report::scratch_dir tmp(dir);                        // dir/.backoff-plot-XXXXXX
//   write_file_atomically(tmp.path() / "charts.gp", script);
//   report::run_gnuplot({}, tmp.path(), "charts.gp");    // plot_error on failure, one line
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace backoff::report {

class plot_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct plot_options {
  // The gnuplot program: a name looked up on PATH, or a path.
  std::string gnuplot = "gnuplot";
};

// A fresh hidden folder inside `parent`, removed with everything in it however drawing ends.
class scratch_dir {
 public:
  explicit scratch_dir(const std::filesystem::path& parent);
  ~scratch_dir();
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs `gnuplot -d SCRIPT` in the folder `dir` (-d: not the user's ~/.gnuplot, so every machine
// draws the same); its output goes to dir/gnuplot.log, of which an error shows the telling line.
void run_gnuplot(const plot_options& options, const std::filesystem::path& dir,
                 const std::string& script);

}  // namespace backoff::report
