// SPDX-License-Identifier: Apache-2.0
// A sweep's results on disk, point by point, so that a sweep of a million points writes its
// outputs without holding them: `backoff sweep` hands each finished point to add() (in point
// order) and drops it; summary.json, sweep.csv and the comparison table are then written by one
// pass each over what was spooled (summary.hpp's writers do it when scenario_result::spool is
// set). The bytes are those the writers give for the same points held in memory.
//
//   auto spool = std::make_shared<report::sweep_spool>(out_dir, /*outage=*/false);
//   for (...) spool->add(point);        // each point once every run of it is done, in order
//   result.spool = spool;               // result.points stays empty
//   report::write_run_files(result, folder);
//
// The spool is three unlinked temporary files in `dir` (the output folder, or the temporary
// folder without one): nothing is left behind however the process ends. What stays in memory is
// the model fields' names and the table's column widths.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "result.hpp"
#include "text_table.hpp"

namespace backoff::report {

class sweep_spool {
 public:
  // `dir`: where the temporary files go; `outage`: the table has the recovery column.
  sweep_spool(const std::filesystem::path& dir, bool outage, std::size_t key_columns);
  sweep_spool(const sweep_spool&) = delete;
  sweep_spool& operator=(const sweep_spool&) = delete;
  ~sweep_spool();

  // One point, after the previous one; its cells may be partial (a stopped sweep).
  void add(const point_result& point);
  std::uint64_t points() const noexcept { return points_; }

  // summary.json's points, as write_summary_json lays them out inside "points": [...].
  void write_points_json(std::ostream& out) const;
  // The model fields of every cell, in the order they first appear (sweep.csv's last columns).
  const std::vector<std::string>& field_names() const noexcept { return fields_; }
  // sweep.csv's rows, with the columns of field_names().
  void write_csv_rows(std::ostream& out) const;
  // The comparison table's rows (`header` first), padded to the widths of every row.
  void write_table(std::ostream& out, const std::vector<std::string>& header) const;

 private:
  // A record is a list of byte strings: [count] then [length][bytes] each (sizes as uint64).
  void put(std::FILE* f, const std::vector<std::string>& record);
  void each(std::FILE* f, const std::function<void(const std::vector<std::string>&)>& visit) const;

  std::FILE* json_ = nullptr;
  std::FILE* csv_ = nullptr;
  std::FILE* table_ = nullptr;
  std::filesystem::path dir_;
  bool outage_ = false;
  std::uint64_t points_ = 0;
  std::vector<std::string> fields_;
  text_columns columns_;
};

}  // namespace backoff::report
