// SPDX-License-Identifier: Apache-2.0
// Shards of a sweep on disk, beyond writing and merging them (runner.hpp): whether a shard's
// output is already there, complete, so that a rerun of a scheduler's job array (a requeue, a
// retry, the whole array submitted again) skips the shards that finished.
//
//   const auto found = sim::find_complete_shard(out, {2, 8}, sc.fingerprint());
//   if (found.complete) return;  // out/shard-2-of-8.json holds this sweep's slice 2 of 8
//
// A shard file is written to a temporary name and renamed into place when whole
// (report::atomic_file), so a file under its final name was written to its end; it is still read
// and checked as the merge checks it (format, fingerprint, index and count, the runs it must
// hold, every run's figures), so a truncated, forged or foreign file is never taken as done.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "report/plots.hpp"
#include "report/result.hpp"

namespace backoff::sim {

// Writes `dir`/shard-I-of-N.json (I/N from r.shard) atomically, as write_shard_json does, plus
// the scenario's path, text and --set overrides, so the merged sweep's report.html shows them
// as the unsharded run's does.
void write_shard_file(const std::filesystem::path& dir, const report::scenario_result& r,
                      const report::report_inputs& from);

// merge_shards (runner.hpp), with what report.html shows of the scenario: from the shard of the
// lowest index that carries it (empty when none does, as in shards of older versions).
struct merged_sweep {
  report::scenario_result result;
  report::report_inputs inputs;
};
// `memory_limit` (bytes of resident set; 0: none) is checked after each shard is read:
// memory_limit_error names how far the merge got.
merged_sweep merge_sweep(const std::vector<std::filesystem::path>& inputs,
                         std::uint64_t memory_limit = 0);

struct existing_shard {
  bool complete = false;
  std::filesystem::path file;  // dir / shard-I-of-N.json
  // Not complete: why the file there (if any) cannot stand for the shard ("" when there is none).
  std::string why_not;
};

// The sweep (its scenario's fingerprint) and the slice a shard file names; nullopt and `why`
// (one line) when the file cannot be read as a shard. Used where a folder's shards must all be of
// one sweep before anything runs (`sweep --emit` into a folder that holds shards).
struct shard_identity {
  std::string fingerprint;
  report::shard_spec shard;
};
std::optional<shard_identity> read_shard_identity(const std::filesystem::path& file,
                                                  std::string& why);

// Looks for `dir`/shard-I-of-N.json of the sweep with `fingerprint`. Never throws on what the
// file holds; a symbolic link or a file that is not regular is never complete.
existing_shard find_complete_shard(const std::filesystem::path& dir,
                                   const report::shard_spec& shard, const std::string& fingerprint);

}  // namespace backoff::sim
