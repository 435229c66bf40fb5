// SPDX-License-Identifier: Apache-2.0
// The folder that `backoff sweep --emit` writes, beyond its job file (sweep_jobs.hpp): which
// sweep it is for, so that two sweeps' shards never mix in it; and how large an array the Slurm
// cluster at hand takes.
//
//   refuse_foreign_shards(dir / "shards", sc.fingerprint(), 16);  // before anything is written
//   ... emit_job(spec) writes dir/backoff-sweep.json (job_record_text) beside the job file ...
//   if (const auto folder = emitted_folder_of(merge_input)) {
//     const job_record record = read_job_record(*folder);      // at --merge: the folder's sweep
//   }
//
//   const slurm_array_limit limit = query_slurm_array_limit();  // `scontrol show config`
//   if (limit.max_array_size && shards > *limit.max_array_size) ...
//
// Why: a folder that held an earlier sweep's shards kept them when another sweep's job file was
// written over it, and `--merge` then joined the old shards into the old sweep's outputs, exit 0.
// Now the emit refuses such a folder, and the merge checks the shards against the folder's
// scenario (its copy, with the job's overrides and seed).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace backoff::cli {

// A folder's state that makes an emit or a merge wrong (reported in one line, exit 2).
class job_folder_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr const char* job_record_file = "backoff-sweep.json";

// What the tasks of an emitted job run: the folder's scenario.toml with these overrides and seed.
struct job_record {
  std::string scheduler;          // slurm, condor, k8s
  std::string job_name;           // as the scheduler knows it
  std::uint32_t shards = 0;       // the split
  std::vector<std::string> sets;  // --set, as given
  std::string seed;               // --seed as given; "" for the scenario's own
  std::string fingerprint;        // of that scenario, at emit time (shown in messages)
  std::string tasks_folder;       // where the tasks read and write (k8s: inside the pods)
};

std::string job_record_text(const job_record& record);
// Reads `folder`/backoff-sweep.json; job_folder_error (naming the file) when it is not one.
job_record read_job_record(const std::filesystem::path& folder);

// Throws job_folder_error when `shards` (a folder; absent is fine) holds a shard file that is not
// of the sweep with `fingerprint` split into `count`, or that cannot be read as a shard: the
// tasks would skip none of them, and a merge of the folder would mix them in or be refused.
void refuse_foreign_shards(const std::filesystem::path& shards, const std::string& fingerprint,
                           std::uint32_t count);

// The emitted folder a `--merge` input belongs to: for DIR/shards (or a file in it) with
// DIR/backoff-sweep.json beside it, DIR; nullopt for shards gathered by hand.
std::optional<std::filesystem::path> emitted_folder_of(const std::filesystem::path& input);

// Slurm's MaxArraySize, as `scontrol show config` reports it: a task index must be below it, so
// an array of tasks 0 to N-1 may have N = MaxArraySize tasks at most. Slurm's default is 1001.
inline constexpr std::uint64_t slurm_default_max_array_size = 1001;
struct slurm_array_limit {
  std::optional<std::uint64_t> max_array_size;  // nullopt: scontrol did not answer
  std::string why_unknown;                      // then: why, for a note
};
// Runs `scontrol show config` (PATH, this environment: SLURM_CONF is honoured), for at most
// `timeout_s` seconds, its output read back from a spool file (tool/spool.hpp; never a shell).
slurm_array_limit query_slurm_array_limit(double timeout_s = 10.0);
// The MaxArraySize line of `scontrol show config`'s output ("MaxArraySize = 1001").
std::optional<std::uint64_t> parse_max_array_size(std::string_view scontrol_output);

}  // namespace backoff::cli
