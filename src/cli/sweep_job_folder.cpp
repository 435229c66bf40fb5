// SPDX-License-Identifier: Apache-2.0
// An emitted sweep folder's record and checks, and Slurm's array limit (sweep_job_folder.hpp).
// MaxArraySize: slurm.conf(5) ("the maximum job array task index value will be one less than
// MaxArraySize"; default 1001) and scontrol(1)'s `show config`, one "Name = value" line each.
#include "sweep_job_folder.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "backoff/error.hpp"
#include "report/output_files.hpp"
#include "sim/run/shards.hpp"
#include "tool/process.hpp"
#include "tool/spool.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace {

constexpr const char* record_format = "backoff-sweep-job/1";

std::string shown_path(const std::filesystem::path& path) {
  return escape_controls(path.string());
}

// What was written to `output`, from its start, at most `most` bytes.
std::string read_spool(const tool::spool& output, std::size_t most) {
  const int fd = output.open_reader();
  std::string text;
  char buffer[4096];
  while (text.size() < most) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace

std::string job_record_text(const job_record& record) {
  nlohmann::ordered_json doc;
  doc["format"] = record_format;
  doc["about"] =
      "The sweep this folder's job runs: scenario.toml with these overrides and seed. "
      "`backoff sweep --emit` refuses to write another sweep's job over its shards, and "
      "`backoff sweep --merge` refuses shards of another sweep.";
  doc["scheduler"] = record.scheduler;
  doc["job_name"] = record.job_name;
  doc["shards"] = record.shards;
  doc["scenario"] = "scenario.toml";
  doc["sets"] = record.sets;
  doc["seed"] = record.seed;
  doc["fingerprint"] = record.fingerprint;
  doc["tasks_folder"] = record.tasks_folder;
  return doc.dump(2) + "\n";
}

job_record read_job_record(const std::filesystem::path& folder) {
  const std::filesystem::path file = folder / job_record_file;
  const std::string where = shown_path(file);
  const std::string text = report::read_whole_file(file);
  if (text.empty()) throw job_folder_error(where + ": cannot be read, or is empty");
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    if (!doc.is_object() || doc.value("format", "") != record_format) {
      throw job_folder_error(where + ": not a job record of backoff sweep --emit (format " +
                             record_format + ")");
    }
    job_record record;
    record.scheduler = doc.at("scheduler").get<std::string>();
    record.job_name = doc.at("job_name").get<std::string>();
    record.shards = doc.at("shards").get<std::uint32_t>();
    record.sets = doc.at("sets").get<std::vector<std::string>>();
    record.seed = doc.at("seed").get<std::string>();
    record.fingerprint = doc.at("fingerprint").get<std::string>();
    record.tasks_folder = doc.at("tasks_folder").get<std::string>();
    if (doc.at("scenario").get<std::string>() != "scenario.toml") {
      throw job_folder_error(where + ": \"scenario\" must be \"scenario.toml\"");
    }
    return record;
  } catch (const nlohmann::json::exception& e) {
    throw job_folder_error(where + ": malformed job record: " + escape_controls(e.what()));
  }
}

void refuse_foreign_shards(const std::filesystem::path& shards, const std::string& fingerprint,
                           std::uint32_t count) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(shards, ec)) return;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(shards, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("shard-") && name.ends_with(".json")) files.push_back(entry.path());
  }
  if (ec) {
    throw job_folder_error(shown_path(shards) + ": cannot be listed: " + ec.message());
  }
  std::sort(files.begin(), files.end());
  std::size_t foreign = 0;
  std::string first;
  for (const auto& file : files) {
    std::string why;
    const auto identity = sim::read_shard_identity(file, why);
    std::string what;
    if (!identity) {
      what = "cannot be read as a shard (" + why + ")";
    } else if (identity->fingerprint != fingerprint) {
      what = "is a shard of another sweep (fingerprint " + escape_controls(identity->fingerprint) +
             "; this one's is " + fingerprint + ")";
    } else if (identity->shard.count != count) {
      what = "is a shard of this sweep split into " + std::to_string(identity->shard.count) +
             ", not " + std::to_string(count);
    }
    if (what.empty()) continue;
    if (foreign++ == 0) first = shown_path(file.filename()) + " " + what;
  }
  if (foreign == 0) return;
  throw job_folder_error(
      shown_path(shards) + " holds " + std::to_string(foreign) + " of " +
      std::to_string(files.size()) + " shard files that this job's tasks would not write (" +
      first + "): a merge would mix them in or refuse; remove them (or the folder), or emit into " +
      "another --out");
}

std::optional<std::filesystem::path> emitted_folder_of(const std::filesystem::path& input) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path absolute = fs::absolute(input, ec).lexically_normal();
  if (ec) return std::nullopt;
  fs::path shards = fs::is_directory(absolute, ec) ? absolute : absolute.parent_path();
  if (shards.filename().empty()) shards = shards.parent_path();  // "DIR/shards/"
  if (shards.filename() != "shards") return std::nullopt;
  const fs::path folder = shards.parent_path();
  if (!fs::exists(folder / job_record_file, ec)) return std::nullopt;
  return folder;
}

std::optional<std::uint64_t> parse_max_array_size(std::string_view scontrol_output) {
  static const std::regex line(R"((?:^|\n)MaxArraySize\s*=\s*([0-9]{1,12})\s*(?:\n|$))");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(scontrol_output.begin(), scontrol_output.end(), m, line)) {
    return std::nullopt;
  }
  return std::stoull(m[1].str());
}

slurm_array_limit query_slurm_array_limit(double timeout_s) {
  slurm_array_limit limit;
  // scontrol retries a SLURM_CONF that names no file for a minute before it fails.
  if (const char* conf = std::getenv("SLURM_CONF"); conf != nullptr && *conf != '\0') {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(conf, ec)) {
      limit.why_unknown = "SLURM_CONF names no file: " + quote_for_message(conf);
      return limit;
    }
  }
  std::optional<tool::spool> output;
  try {
    output.emplace(tool::spool::create());
  } catch (const std::exception& e) {
    limit.why_unknown = std::string("no file for scontrol's output: ") + e.what();
    return limit;
  }
  tool::launch_spec spec;
  spec.argv = {"scontrol", "show", "config"};
  spec.environment = tool::current_environment();
  // Its complaints too: only a line that starts with MaxArraySize is read.
  spec.descriptors = {{1, output->fd()}, {2, output->fd()}};
  tool::attempt_limits limits;
  limits.kill_at = tool::steady_now() +
                   std::chrono::duration_cast<duration>(std::chrono::duration<double>(timeout_s));
  limits.grace = std::chrono::seconds(1);
  const tool::cancel_scope scope;
  const tool::attempt_result r = tool::run_attempt(spec, limits, scope);
  if (r.ended == tool::attempt_end::not_found || r.ended == tool::attempt_end::not_executable) {
    limit.why_unknown = "scontrol is not on PATH";
  } else if (r.ended == tool::attempt_end::timed_out) {
    limit.why_unknown = "scontrol show config did not answer within " +
                        std::to_string(static_cast<int>(timeout_s)) + " s";
  } else if (r.status() != 0) {
    limit.why_unknown = "scontrol show config exited " + std::to_string(r.status());
  } else {
    try {
      limit.max_array_size = parse_max_array_size(read_spool(*output, 1 << 20));
    } catch (const std::exception& e) {
      limit.why_unknown = std::string("scontrol's output could not be read: ") + e.what();
      return limit;
    }
    if (!limit.max_array_size) {
      limit.why_unknown = "scontrol show config printed no MaxArraySize";
    }
  }
  return limit;
}

}  // namespace backoff::cli
