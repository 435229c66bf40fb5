// SPDX-License-Identifier: Apache-2.0
// The JSON mappings of the result types (result.hpp), as nlohmann's ADL hooks: to_json and
// from_json beside the types, so that summary.json and the shard files of a sweep convert a value
// in one place, not field by field where each document is built.
//
//   nlohmann::ordered_json entry = summary;          // summary.json's strategy entry
//   nlohmann::ordered_json doc = result;             // the whole summary.json (schema first)
//   nlohmann::json record = summary;                 // a shard's record: every figure exact
//   auto back = record.get<report::strategy_summary>();   // checked field by field
//
// Two documents, told apart by their json type:
// - summary.json is a nlohmann::ordered_json (keys in the order SPEC 6.2 shows them) holding what
//   readers want: derived figures (failed, success_rate, load), a null for what a run lacks, the
//   means and 95 % intervals of a sweep's replications. Write-only: a reader of results reads it.
// - A shard file (`backoff sweep --shard`) is a nlohmann::json holding each run exactly, so that
//   the merge rebuilds the unsharded result number for number: from_json checks every field's
//   type and range and throws std::invalid_argument naming it (a shard may be truncated, forged
//   or of another version).
// The sweep ones (sweep_cell, point_result) are defined in summary.cpp, beside the statistics
// over replications they share with sweep.csv and the comparison table.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "result.hpp"

namespace backoff::report {

// summary.json's `schema`: raised when a field is renamed or removed or changes meaning (fields
// are added without raising it).
inline constexpr int summary_schema = 1;

// summary.json (nlohmann::ordered_json).
void to_json(nlohmann::ordered_json& j, const latency_summary& l);
void to_json(nlohmann::ordered_json& j, const phase_goodput& p);
void to_json(nlohmann::ordered_json& j, const strategy_summary& s);
void to_json(nlohmann::ordered_json& j, const sweep_value& v);  // typed: 25, 0.5, "10s", true
void to_json(nlohmann::ordered_json& j, const sweep_cell& c);   // a mean over replications
void to_json(nlohmann::ordered_json& j, const point_result& p);
void to_json(nlohmann::ordered_json& j, const map_axes& m);
void to_json(nlohmann::ordered_json& j, const boundary_point& p);  // without its map's names
// The whole document. A spooled sweep (scenario_result::spool) has its points on disk: its
// "points" is empty here, and write_summary_json (summary.hpp) fills it as it streams them.
void to_json(nlohmann::ordered_json& j, const scenario_result& r);

// Shard files (nlohmann::json): a run's figures (without its name: a shard names strategies once)
// and a swept value (toml, text and type).
void to_json(nlohmann::json& j, const strategy_summary& s);
void from_json(const nlohmann::json& j, strategy_summary& s);
void to_json(nlohmann::json& j, const sweep_value& v);
void from_json(const nlohmann::json& j, sweep_value& v);

// Checked reads for documents from outside (shard files): std::invalid_argument naming the key
// when the value is missing or of the wrong type or range.
namespace checked {
// A whole number >= 0 (nlohmann would wrap -1 to 2^64 - 1).
std::uint64_t count_at(const nlohmann::json& j, const char* key);
// A finite number, and >= 0 unless `signed_ok` (times, rates and loads are never negative).
double figure(const nlohmann::json& v, const std::string& key, bool signed_ok = false);
double figure_at(const nlohmann::json& j, const char* key);
std::string string_at(const nlohmann::json& j, const char* key);
bool boolean_at(const nlohmann::json& j, const char* key);
}  // namespace checked

}  // namespace backoff::report
