// SPDX-License-Identifier: Apache-2.0
// The files and the table of a run (SPEC 2.3, 2.4, 6.2): summary.json, timeseries.csv,
// services.csv (a model with several services),
// clients.csv rows, sweep.csv, and the comparison table printed on stdout. The simulator
// (`sim`, `sweep`) and the network harness (`load`) both write through here.
//
//   report::output_folder out(dir);
//   report::atomic_file clients = out.create("clients.csv");
//   clients.stream() << report::clients_csv_header_line;     // clients_csv.hpp; rows: the recorder
//   ... run ...
//   clients.commit();
//   report::write_run_files(result, out);   // timeseries.csv (services.csv) or sweep.csv, then
//                                           // summary.json
//   std::cout << report::comparison_table(result);
//
// Text from inputs (names, sweep values) is written as valid UTF-8 in JSON (bytes that are not
// UTF-8 become U+FFFD) and RFC 4180-quoted in CSV.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "clients_csv.hpp"
#include "output_files.hpp"
#include "result.hpp"

namespace backoff::report {

// `doc` as text, indented by `indent`, with any invalid UTF-8 replaced by U+FFFD (never an
// exception after the work is done).
std::string json_text(const nlohmann::ordered_json& doc, int indent = 2);

// summary.json exactly as SPEC 6.2 shows it (plus added fields): the document result_json.hpp
// maps the result to, its points streamed from the spool of a spooled sweep.
void write_summary_json(const scenario_result& r, std::ostream& out);
void write_timeseries_csv(const scenario_result& r, std::ostream& out);
// A model with several services (strategy_summary::services): one row per strategy, service and
// bucket, strategies in run order, services in the model's, every bucket from 0.
inline constexpr std::string_view services_csv_header =
    "strategy,service,t_s,arrivals,attempts,completed,rejected,failed,peak_in_flight,peak_queue";
void write_services_csv(const scenario_result& r, std::ostream& out);
// Sweeps: one row per point and strategy (SPEC 2.4).
void write_sweep_csv(const scenario_result& r, std::ostream& out);

// A plain run: timeseries.csv (and services.csv when a strategy has services) then summary.json; a
// sweep: sweep.csv then summary.json; a metastable map (scenario_result::maps): boundary.csv then
// summary.json. Then the folder's manifest (files of an earlier run that this one did not write are
// removed).
void write_run_files(const scenario_result& r, output_folder& out);

// The strategies side by side; a metastable map's boundary table (report::map_table).
std::string comparison_table(const scenario_result& r);
// The same, written as it goes (a spooled sweep's table is never held whole).
void write_comparison_table(const scenario_result& r, std::ostream& out);

// The pieces of the writers above for one sweep point, for sweep_spool (which writes a sweep
// point by point): summary.json's entry (its to_json), sweep.csv's columns before the model fields
// and each field's two, the table's header and rows.
nlohmann::ordered_json sweep_point_json(const point_result& p);
bool sweep_cell_complete(const sweep_cell& cell);
std::vector<std::string> sweep_cell_fields(const sweep_cell& cell);
std::string sweep_csv_core(const point_result& p, const sweep_cell& cell);
std::string sweep_csv_field(const sweep_cell& cell, const std::string& name);
std::string sweep_csv_header(const std::vector<std::string>& sweep_keys,
                             const std::vector<std::string>& fields);
std::vector<std::string> comparison_header(const scenario_result& r);
void comparison_point_rows(const point_result& p, bool outage,
                           std::vector<std::vector<std::string>>& rows);

}  // namespace backoff::report
