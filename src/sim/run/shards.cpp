// SPDX-License-Identifier: Apache-2.0
// Shards of a sweep: `backoff sweep --shard I/N` writes the runs of one slice with every number
// exact (JSON doubles round-trip), and merge_shards() puts N of them back into the result of the
// unsharded run, so that summary.json (but its wall time) and sweep.csv come out byte for byte
// the same. A shard names its sweep by the scenario's fingerprint: shards of different files,
// overrides or seeds are refused rather than mixed. A shard also carries what the whole result
// shows beside the figures (the scenario's [about] table, the outage window), so the merged
// result is the unsharded one field for field. find_complete_shard (shards.hpp) lets a rerun skip
// a shard that is already written.
#include "shards.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "backoff/error.hpp"
#include "report/output_files.hpp"
#include "runner.hpp"

namespace backoff::sim {
namespace {

constexpr const char* shard_format = "backoff-sweep-shard/2";

const char* type_name(report::sweep_value::kind k) {
  switch (k) {
    case report::sweep_value::kind::integer:
      return "integer";
    case report::sweep_value::kind::number:
      return "number";
    case report::sweep_value::kind::string:
      return "string";
    case report::sweep_value::kind::boolean:
      return "boolean";
  }
  return "string";
}

report::sweep_value::kind type_of(const std::string& name) {
  if (name == "integer") return report::sweep_value::kind::integer;
  if (name == "number") return report::sweep_value::kind::number;
  if (name == "boolean") return report::sweep_value::kind::boolean;
  if (name == "string") return report::sweep_value::kind::string;
  throw std::invalid_argument("unknown parameter type '" + name + "'");
}

nlohmann::json summary_json(const report::strategy_summary& s) {
  nlohmann::json j;
  j["operations"] = s.operations;
  j["completed"] = s.completed;
  j["gave_up"] = s.gave_up;
  j["unfinished"] = s.unfinished;
  j["attempts"] = s.attempts;
  j["attempts_per_operation"] = s.attempts_per_operation;
  j["makespan_s"] = s.makespan_s;
  if (s.latency_s) {
    const report::latency_summary& l = *s.latency_s;
    j["latency_s"] = {l.p50, l.p75, l.p90, l.p95, l.p99, l.p999, l.p9999, l.max};
  } else {
    j["latency_s"] = nullptr;  // nothing completed
  }
  j["goodput_per_s"] = s.goodput_per_s;
  j["peak_load"] = s.peak_load;
  j["mean_load"] = s.mean_load;
  j["recovery_s"] = s.recovery_s ? nlohmann::json(*s.recovery_s) : nlohmann::json(nullptr);
  j["events"] = s.events;
  j["has_window"] = s.has_window;
  j["seconds_per_unit"] = s.seconds_per_unit;
  j["bucket_width"] = s.bucket_width;
  auto& fields = j["fields"] = nlohmann::json::array();
  for (const auto& f : s.fields) {
    fields.push_back({f.name, f.value ? nlohmann::json(*f.value) : nlohmann::json(nullptr)});
  }
  return j;
}

report::strategy_summary summary_of(const nlohmann::json& j, const std::string& name) {
  report::strategy_summary s;
  s.name = name;
  j.at("operations").get_to(s.operations);
  j.at("completed").get_to(s.completed);
  j.at("gave_up").get_to(s.gave_up);
  j.at("unfinished").get_to(s.unfinished);
  j.at("attempts").get_to(s.attempts);
  j.at("attempts_per_operation").get_to(s.attempts_per_operation);
  j.at("makespan_s").get_to(s.makespan_s);
  if (const auto& l = j.at("latency_s"); !l.is_null()) {
    if (!l.is_array() || l.size() != 8) {
      throw std::invalid_argument("latency_s: expected 8 numbers or null");
    }
    s.latency_s = report::latency_summary{
        l[0].get<double>(), l[1].get<double>(), l[2].get<double>(), l[3].get<double>(),
        l[4].get<double>(), l[5].get<double>(), l[6].get<double>(), l[7].get<double>()};
  }
  j.at("goodput_per_s").get_to(s.goodput_per_s);
  j.at("peak_load").get_to(s.peak_load);
  j.at("mean_load").get_to(s.mean_load);
  if (!j.at("recovery_s").is_null()) s.recovery_s = j.at("recovery_s").get<double>();
  j.at("events").get_to(s.events);
  j.at("has_window").get_to(s.has_window);
  j.at("seconds_per_unit").get_to(s.seconds_per_unit);
  j.at("bucket_width").get_to(s.bucket_width);
  for (const auto& f : j.at("fields")) {
    if (!f.is_array() || f.size() != 2) {
      throw std::invalid_argument("fields: expected [name, value] pairs");
    }
    s.fields.push_back({f[0].get<std::string>(),
                        f[1].is_null() ? std::nullopt : std::optional<double>(f[1].get<double>())});
  }
  return s;
}

// The shard files named by the inputs: files as given, folders' shard-*-of-*.json in name order.
std::vector<std::filesystem::path> shard_files(const std::vector<std::filesystem::path>& inputs) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(in)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with("shard-") && name.ends_with(".json") &&
            name.find("-of-") != std::string::npos) {
          found.push_back(entry.path());
        }
      }
      if (found.empty()) throw scenario_error(in.string() + ": no shard-*-of-*.json in it");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(in, ec)) {
      files.push_back(in);
    } else if (fs::exists(in, ec)) {
      throw scenario_error(in.string() + ": not a shard file or a folder of shards");
    } else {
      throw scenario_error(in.string() + ": no such file or folder");
    }
  }
  return files;
}

}  // namespace

std::string shard_file_name(const report::shard_spec& shard) {
  return "shard-" + std::to_string(shard.index) + "-of-" + std::to_string(shard.count) + ".json";
}

namespace {

nlohmann::json shard_document(const report::scenario_result& r, const report::report_inputs* from) {
  const report::shard_spec part = r.shard.value_or(report::shard_spec{});
  nlohmann::json doc;
  doc["format"] = shard_format;
  doc["scenario"] = r.scenario;
  doc["model"] = r.model;
  doc["seed"] = r.seed;
  doc["fingerprint"] = r.fingerprint;
  doc["shard"] = {{"index", part.index}, {"count", part.count}};
  doc["replications"] = r.replications;
  doc["outage"] = r.outage;
  // Added in issue 23; absent from older shard files, read as empty / none.
  doc["about"] = {{"description", r.description}, {"source", r.source}, {"claim", r.claim}};
  doc["outage_s"] = r.outage_s ? nlohmann::json::array({r.outage_s->first, r.outage_s->second})
                               : nlohmann::json(nullptr);
  doc["wall_s"] = r.wall_s;
  doc["sweep_keys"] = r.sweep_keys;
  auto& points = doc["points"] = nlohmann::json::array();
  for (const auto& p : r.points) {
    auto params = nlohmann::json::array();
    for (const auto& [key, value] : p.params) {
      params.push_back({{"key", key},
                        {"toml", value.toml},
                        {"text", value.text},
                        {"type", type_name(value.type)}});
    }
    points.push_back({{"params", params}});
  }
  auto& names = doc["strategies"] = nlohmann::json::array();
  if (!r.points.empty()) {
    for (const auto& cell : r.points.front().strategies) names.push_back(cell.name);
  }
  auto& runs = doc["runs"] = nlohmann::json::array();
  for (std::size_t p = 0; p < r.points.size(); ++p) {
    for (std::size_t s = 0; s < r.points[p].strategies.size(); ++s) {
      const report::sweep_cell& cell = r.points[p].strategies[s];
      for (std::size_t rep = 0; rep < cell.runs.size(); ++rep) {
        if (cell.ran[rep] == 0) continue;
        runs.push_back({{"point", p},
                        {"strategy", s},
                        {"replication", rep},
                        {"summary", summary_json(cell.runs[rep])}});
      }
    }
  }
  if (from != nullptr) {
    // What report.html shows of the scenario, so that a merged sweep's report is the unsharded
    // one's (absent from older shard files and from shards runner.cpp writes itself).
    doc["inputs"] = {{"scenario_path", from->scenario_path},
                     {"scenario_toml", from->scenario_toml},
                     {"sets", from->sets}};
  }
  return doc;
}

}  // namespace

void write_shard_json(const report::scenario_result& r, std::ostream& out) {
  out << shard_document(r, nullptr).dump() << '\n';
}

void write_shard_file(const std::filesystem::path& dir, const report::scenario_result& r,
                      const report::report_inputs& from) {
  // A shards folder is shared by many tasks: no manifest, nothing removed.
  report::output_folder folder(dir, report::output_folder::manifest::none);
  report::atomic_file file = folder.create(shard_file_name(r.shard.value_or(report::shard_spec{})));
  file.stream() << shard_document(r, &from).dump() << '\n';
  file.commit();
}

namespace {

// A shard holds ~400 bytes per run: 256 MiB is over half a million runs per shard, far past any
// sweep split into shards, and bounds what a hostile file can make the merge parse.
constexpr std::uint64_t max_shard_bytes = 256ULL << 20;

// The bytes of a regular file of at most max_shard_bytes: never a device, a FIFO or /dev/zero
// behind a symlink, which would hang or exhaust memory.
std::string read_bounded(const std::filesystem::path& file) {
  const std::string where = file.string();
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw scenario_error(where + ": cannot read: " + std::strerror(errno));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } const close_it{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw scenario_error(where + ": cannot read: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw scenario_error(where + ": not a regular file: not a shard");
  if (static_cast<std::uint64_t>(st.st_size) > max_shard_bytes) {
    throw scenario_error(where + ": larger than 256 MiB: not a shard of backoff sweep");
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw scenario_error(where + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;  // shrank meanwhile: parse what is there
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return text;
}

nlohmann::json read_shard(const std::filesystem::path& file) {
  const std::string where = file.string();
  auto doc = nlohmann::json::parse(read_bounded(file));
  if (!doc.is_object() || doc.value("format", "") != shard_format) {
    throw scenario_error(where + ": not a shard file of backoff sweep (format " +
                         std::string(shard_format) + ")");
  }
  return doc;
}

// A whole number in [min, max] at doc[key] (a shard's counts are never negative or fractional).
std::uint64_t count_at(const nlohmann::json& doc, const char* key, std::uint64_t min,
                       std::uint64_t max) {
  const nlohmann::json& v = doc.at(key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min || v.get<std::uint64_t>() > max) {
    throw std::invalid_argument(std::string(key) + ": expected a whole number from " +
                                std::to_string(min) + " to " + std::to_string(max));
  }
  return v.get<std::uint64_t>();
}

// A shard's claims, checked before anything is allocated from them: it is shard `index` of
// `count` and holds exactly its share (every count-th run from index - 1) of points x strategies
// x replications. So a shard that claims 10^12 replications is refused, not allocated.
void check_shape(const nlohmann::json& doc, const std::string& where) {
  const nlohmann::json& shard = doc.at("shard");
  const std::uint64_t count =
      count_at(shard, "count", 1, std::numeric_limits<std::uint32_t>::max());
  const std::uint64_t index = count_at(shard, "index", 1, count);
  const std::uint64_t replications =
      count_at(doc, "replications", 1, std::numeric_limits<std::uint32_t>::max());
  const nlohmann::json& points = doc.at("points");
  const nlohmann::json& strategies = doc.at("strategies");
  const nlohmann::json& runs = doc.at("runs");
  if (!points.is_array() || !strategies.is_array() || !runs.is_array()) {
    throw std::invalid_argument("points, strategies and runs must be lists");
  }
  // points and strategies are lists in a file of bounded size: their product fits; with the
  // replications it may not, and then no file could hold the share.
  const std::uint64_t cells = static_cast<std::uint64_t>(points.size()) * strategies.size();
  const std::uint64_t first = index - 1;
  const bool overflows =
      cells != 0 && replications > std::numeric_limits<std::uint64_t>::max() / cells;
  const std::uint64_t tasks = overflows ? 0 : cells * replications;
  const std::uint64_t share = tasks <= first ? 0 : (tasks - first - 1) / count + 1;
  if (overflows || share != runs.size()) {
    throw scenario_error(where + ": " + std::to_string(points.size()) + " points x " +
                         std::to_string(strategies.size()) + " strategies x " +
                         std::to_string(replications) + " replications in " +
                         std::to_string(count) + " shards would give shard " +
                         std::to_string(index) + " " +
                         (overflows ? std::string("more than 2^64") : std::to_string(share)) +
                         " runs; it holds " + std::to_string(runs.size()));
  }
}

// The whole sweep's shape, from the first shard: its identity, points and strategies, and a slot
// for every run.
void lay_out_from(const nlohmann::json& doc, report::scenario_result& result) {
  result.scenario = doc.at("scenario").get<std::string>();
  result.model = doc.at("model").get<std::string>();
  result.seed = doc.at("seed").get<std::uint64_t>();
  result.fingerprint = doc.at("fingerprint").get<std::string>();
  result.replications = doc.at("replications").get<std::uint32_t>();
  result.outage = doc.at("outage").get<bool>();
  if (const auto about = doc.find("about"); about != doc.end()) {
    result.description = about->at("description").get<std::string>();
    result.source = about->at("source").get<std::string>();
    result.claim = about->at("claim").get<std::string>();
  }
  if (const auto window = doc.find("outage_s"); window != doc.end() && !window->is_null()) {
    if (!window->is_array() || window->size() != 2) {
      throw std::invalid_argument("outage_s: expected [from, to] or null");
    }
    result.outage_s = {(*window)[0].get<double>(), (*window)[1].get<double>()};
  }
  result.sweep = true;
  result.sweep_keys = doc.at("sweep_keys").get<std::vector<std::string>>();
  const auto names = doc.at("strategies").get<std::vector<std::string>>();
  for (const auto& point : doc.at("points")) {
    report::point_result p;
    for (const auto& param : point.at("params")) {
      report::sweep_value v;
      v.toml = param.at("toml").get<std::string>();
      v.text = param.at("text").get<std::string>();
      v.type = type_of(param.at("type").get<std::string>());
      p.params.emplace_back(param.at("key").get<std::string>(), v);
    }
    for (const auto& name : names) {
      p.strategies.push_back({name, std::vector<report::strategy_summary>(result.replications),
                              std::vector<std::uint8_t>(result.replications, 0)});
    }
    result.points.push_back(std::move(p));
  }
}

// The runs of one shard into their slots.
void add_runs(const nlohmann::json& doc, const std::string& where,
              report::scenario_result& result) {
  result.wall_s += doc.at("wall_s").get<double>();
  for (const auto& run : doc.at("runs")) {
    const auto p = run.at("point").get<std::size_t>();
    const auto s = run.at("strategy").get<std::size_t>();
    const auto rep = run.at("replication").get<std::size_t>();
    if (p >= result.points.size() || s >= result.points[p].strategies.size() ||
        rep >= result.replications) {
      throw scenario_error(where + ": a run outside the sweep's grid");
    }
    report::sweep_cell& cell = result.points[p].strategies[s];
    cell.runs[rep] = summary_of(run.at("summary"), cell.name);
    cell.ran[rep] = 1;
    result.events += cell.runs[rep].events;
  }
}

// "shard(s) 2, 5 of 6 missing: ...", naming at most the first ten.
scenario_error missing_error(const std::set<std::uint64_t>& seen, std::uint64_t count) {
  std::string missing;
  std::size_t named = 0;
  for (std::uint64_t i = 1; i <= count && named <= 10; ++i) {
    if (seen.contains(i)) continue;
    missing += (missing.empty() ? "" : ", ") + (named == 10 ? "..." : std::to_string(i));
    ++named;
  }
  return scenario_error("shard(s) " + missing + " of " + std::to_string(count) +
                        " missing: every shard of the sweep is needed");
}

// The error for a split into more shards than files were given: which ones are missing.
scenario_error missing_shards(const std::vector<std::filesystem::path>& files,
                              std::uint64_t count) {
  std::set<std::uint64_t> seen;
  for (const auto& file : files) {
    try {
      const nlohmann::json doc = read_shard(file);
      seen.insert(doc.at("shard").at("index").get<std::uint64_t>());
    } catch (const std::exception&) {
      // Named as malformed when the merge reaches it; here it simply is not a shard index.
    }
  }
  return missing_error(seen, count);
}

// Every shard 1..count was given, and together they ran every run.
void check_complete(const std::map<std::uint32_t, std::string>& seen, std::uint32_t count,
                    const report::scenario_result& result) {
  std::set<std::uint64_t> indices;
  for (const auto& [index, file] : seen) indices.insert(index);
  if (indices.size() != count) throw missing_error(indices, count);
  for (const auto& p : result.points) {
    for (const auto& cell : p.strategies) {
      if (std::find(cell.ran.begin(), cell.ran.end(), 0) != cell.ran.end()) {
        throw scenario_error("the shards do not cover every run of the sweep");
      }
    }
  }
}

}  // namespace

report::scenario_result merge_shards(const std::vector<std::filesystem::path>& inputs) {
  return merge_sweep(inputs).result;
}

merged_sweep merge_sweep(const std::vector<std::filesystem::path>& inputs) {
  merged_sweep merged;
  report::scenario_result& result = merged.result;
  std::optional<nlohmann::json> first_inputs;  // of the lowest shard index that has them
  std::map<std::uint32_t, std::string> seen;   // shard index -> its file
  std::uint32_t count = 0;
  const std::vector<std::filesystem::path> files = shard_files(inputs);
  for (const auto& file : files) {
    const std::string where = file.string();
    try {
      const nlohmann::json doc = read_shard(file);
      check_shape(doc, where);
      const auto index = doc.at("shard").at("index").get<std::uint32_t>();
      const auto n = doc.at("shard").at("count").get<std::uint32_t>();
      const auto fingerprint = doc.at("fingerprint").get<std::string>();
      if (seen.empty()) {
        count = n;
        // Fewer files than shards: some are missing, and the grid (which the count bounds) is
        // not allocated.
        if (count > files.size()) throw missing_shards(files, count);
        lay_out_from(doc, result);
      } else if (fingerprint != result.fingerprint) {
        throw scenario_error(where + ": a shard of another sweep (scenario " +
                             doc.at("scenario").get<std::string>() + ", fingerprint " +
                             fingerprint + "; the first file's is " + result.fingerprint + ")");
      } else if (n != count) {
        throw scenario_error(where + ": shard " + std::to_string(index) + "/" + std::to_string(n) +
                             " does not fit the others' split into " + std::to_string(count));
      }
      if (index < 1 || index > count) {
        throw scenario_error(where + ": shard index " + std::to_string(index) + " is not in 1.." +
                             std::to_string(count));
      }
      if (const auto it = seen.find(index); it != seen.end()) {
        throw scenario_error(where + ": shard " + std::to_string(index) + "/" +
                             std::to_string(count) + " is also in " + it->second);
      }
      seen[index] = where;
      add_runs(doc, where, result);
      if (const auto given = doc.find("inputs");
          given != doc.end() && seen.begin()->first == index) {
        first_inputs = *given;  // shards of one fingerprint differ at most in the file's path
      }
    } catch (const nlohmann::json::exception& e) {
      throw scenario_error(where + ": malformed shard file: " + e.what());
    } catch (const std::invalid_argument& e) {
      throw scenario_error(where + ": malformed shard file: " + e.what());
    }
  }
  check_complete(seen, count, result);
  if (first_inputs) {
    try {
      merged.inputs.scenario_path = first_inputs->at("scenario_path").get<std::string>();
      merged.inputs.scenario_toml = first_inputs->at("scenario_toml").get<std::string>();
      merged.inputs.sets = first_inputs->at("sets").get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception& e) {
      throw scenario_error(seen.begin()->second + ": malformed shard file: inputs: " + e.what());
    }
  }
  return merged;
}

existing_shard find_complete_shard(const std::filesystem::path& dir,
                                   const report::shard_spec& shard,
                                   const std::string& fingerprint) {
  namespace fs = std::filesystem;
  existing_shard found;
  found.file = dir / shard_file_name(shard);
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(found.file, ec);
  if (ec || status.type() == fs::file_type::not_found) return found;
  if (status.type() != fs::file_type::regular) {
    found.why_not = "not a regular file";
    return found;
  }
  try {
    const nlohmann::json doc = read_shard(found.file);
    const std::string where = found.file.string();
    check_shape(doc, where);
    const auto index = doc.at("shard").at("index").get<std::uint32_t>();
    const auto count = doc.at("shard").at("count").get<std::uint32_t>();
    const auto theirs = doc.at("fingerprint").get<std::string>();
    if (index != shard.index || count != shard.count) {
      found.why_not = "it names shard " + std::to_string(index) + "/" + std::to_string(count);
      return found;
    }
    if (theirs != fingerprint) {
      found.why_not =
          "of another sweep (fingerprint " + theirs + ", this one's " + fingerprint + ")";
      return found;
    }
    // Every run it must hold, each readable as the merge reads it.
    report::scenario_result scratch;
    lay_out_from(doc, scratch);
    add_runs(doc, where, scratch);
    // ... and only its own: run t (numbered point by point, strategy by strategy, replication
    // by replication) belongs to shard t mod count + 1; with the count checked by check_shape,
    // no run missing either.
    const std::size_t strategies = doc.at("strategies").size();
    for (const auto& run : doc.at("runs")) {
      const std::size_t task = (run.at("point").get<std::size_t>() * strategies +
                                run.at("strategy").get<std::size_t>()) *
                                   scratch.replications +
                               run.at("replication").get<std::size_t>();
      if (task % count != index - 1) {
        found.why_not = "it holds a run of another shard";
        return found;
      }
    }
    std::size_t held = 0;
    for (const auto& p : scratch.points) {
      for (const auto& cell : p.strategies) {
        held += static_cast<std::size_t>(std::count(cell.ran.begin(), cell.ran.end(), 1));
      }
    }
    if (held != doc.at("runs").size()) {
      found.why_not = "it holds a run twice";
      return found;
    }
    found.complete = true;
  } catch (const std::exception& e) {
    found.why_not = escape_controls(e.what());
  }
  return found;
}

}  // namespace backoff::sim
