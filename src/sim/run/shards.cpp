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
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "backoff/error.hpp"
#include "report/output_files.hpp"
#include "report/result_json.hpp"
#include "runner.hpp"

namespace backoff::sim {
namespace {

using report::checked::count_at;
using report::checked::figure;
using report::checked::figure_at;
using report::checked::string_at;

constexpr const char* shard_format = "backoff-sweep-shard/2";

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
      nlohmann::json param = value;
      param["key"] = key;
      params.push_back(std::move(param));
    }
    points.push_back({{"params", std::move(params)}});
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
        runs.push_back(
            {{"point", p}, {"strategy", s}, {"replication", rep}, {"summary", cell.runs[rep]}});
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

// One run of a shard, where it goes in the grid.
struct placed_run {
  std::uint64_t point = 0, strategy = 0, replication = 0;
  report::strategy_summary summary;
};

// A shard file as read: the header (everything but its points and runs), and its points and runs
// each checked and converted as the parser finished it. A parsed JSON value costs far more memory
// than its text (an entry `{}` of 3 bytes is over 300), so the points and runs are never held as
// one document: what the merge allocates follows what the file really holds, entry by entry.
struct shard_contents {
  nlohmann::json header;
  std::vector<report::point_result> points;  // params only
  std::vector<placed_run> runs;
};

// A point's or run's entry holds a few dozen values; the rest of the file (names and keys) a few
// per strategy and axis. Beyond these a file is not a shard, whatever its size.
constexpr std::size_t max_values_per_entry = 4096;
constexpr std::size_t max_header_values = 1'000'000;

report::point_result point_of(const nlohmann::json& j) {
  const nlohmann::json& params = j.at("params");
  if (!params.is_array()) throw std::invalid_argument("points: params: expected a list");
  report::point_result p;
  for (const auto& param : params) {
    if (!param.is_object()) throw std::invalid_argument("points: params: expected objects");
    std::string key = string_at(param, "key");
    try {
      p.params.emplace_back(std::move(key), param.get<report::sweep_value>());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("points: " + escape_controls(key) + " = " + e.what());
    }
  }
  return p;
}

placed_run run_of(const nlohmann::json& j) {
  placed_run run;
  run.point = count_at(j, "point");
  run.strategy = count_at(j, "strategy");
  run.replication = count_at(j, "replication");
  run.summary = j.at("summary").get<report::strategy_summary>();
  return run;
}

// Parses a shard, converting each entry of "points" and "runs" as it ends and dropping it from
// the document; throws std::invalid_argument or a json exception on what is not a shard.
shard_contents parse_shard(const std::string& text) {
  using event = nlohmann::json::parse_event_t;
  shard_contents out;
  std::string section;  // the top-level key being parsed
  std::size_t entry_values = 0, header_values = 0;
  const auto in_entries = [&] { return section == "points" || section == "runs"; };
  out.header = nlohmann::json::parse(text, [&](int depth, event e, nlohmann::json& parsed) {
    if (depth == 1 && e == event::key) {
      section = parsed.get<std::string>();
      ++header_values;
      return true;
    }
    if (depth < 2 || !in_entries()) {
      if (++header_values > max_header_values) {
        throw std::invalid_argument("more values outside its points and runs than any shard has");
      }
      return true;
    }
    if (depth == 2 && e != event::object_start && e != event::object_end) {
      throw std::invalid_argument(section + ": expected a list of objects");
    }
    if (depth == 2 && e == event::object_start) entry_values = 0;
    if (++entry_values > max_values_per_entry) {
      throw std::invalid_argument(section + ": an entry of more values than any shard has");
    }
    if (depth == 2 && e == event::object_end) {
      if (section == "points") {
        out.points.push_back(point_of(parsed));
      } else {
        out.runs.push_back(run_of(parsed));
      }
      return false;  // converted: not kept in the document
    }
    return true;
  });
  return out;
}

shard_contents read_shard(const std::filesystem::path& file) {
  const std::string where = file.string();
  shard_contents shard = parse_shard(read_bounded(file));
  const nlohmann::json& doc = shard.header;
  if (!doc.is_object() || doc.value("format", "") != shard_format) {
    throw scenario_error(where + ": not a shard file of backoff sweep (format " +
                         std::string(shard_format) + ")");
  }
  return shard;
}

// A whole number in [min, max] at doc[key] (a shard's counts are never negative or fractional).
std::uint64_t bounded_count_at(const nlohmann::json& doc, const char* key, std::uint64_t min,
                               std::uint64_t max) {
  const nlohmann::json& v = doc.at(key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min || v.get<std::uint64_t>() > max) {
    throw std::invalid_argument(std::string(key) + ": expected a whole number from " +
                                std::to_string(min) + " to " + std::to_string(max));
  }
  return v.get<std::uint64_t>();
}

// The sweep's axes and strategies as the shard names them: lists of distinct names, every
// point with one value of each axis, in axis order.
void check_grid(const shard_contents& shard) {
  const nlohmann::json& doc = shard.header;
  const nlohmann::json& keys = doc.at("sweep_keys");
  const nlohmann::json& strategies = doc.at("strategies");
  if (!keys.is_array() || !strategies.is_array()) {
    throw std::invalid_argument("sweep_keys and strategies must be lists");
  }
  const auto names = [](const nlohmann::json& list, const char* what) {
    std::set<std::string> seen;
    for (const auto& n : list) {
      if (!n.is_string() || n.get_ref<const std::string&>().empty() ||
          !seen.insert(n.get<std::string>()).second) {
        throw std::invalid_argument(std::string(what) + ": expected distinct names");
      }
    }
  };
  names(keys, "sweep_keys");
  names(strategies, "strategies");
  if (strategies.empty()) throw std::invalid_argument("strategies: none");
  if (shard.points.empty()) throw std::invalid_argument("points: none");
  for (std::size_t p = 0; p < shard.points.size(); ++p) {
    const auto& params = shard.points[p].params;
    bool same = params.size() == keys.size();
    for (std::size_t k = 0; same && k < params.size(); ++k) {
      same = params[k].first == keys[k].get_ref<const std::string&>();
    }
    if (!same) {
      throw std::invalid_argument("points: point " + std::to_string(p + 1) +
                                  " does not give one value of each of sweep_keys, in order");
    }
  }
}

// A shard's claims, checked before anything is allocated from them: it is shard `index` of
// `count` and holds exactly its share (every count-th run from index - 1) of points x strategies
// x replications. So a shard that claims 10^12 replications is refused, not allocated.
void check_shape(const shard_contents& shard, const std::string& where) {
  const nlohmann::json& doc = shard.header;
  const nlohmann::json& part = doc.at("shard");
  const std::uint64_t count =
      bounded_count_at(part, "count", 1, std::numeric_limits<std::uint32_t>::max());
  const std::uint64_t index = bounded_count_at(part, "index", 1, count);
  const std::uint64_t replications =
      bounded_count_at(doc, "replications", 1, std::numeric_limits<std::uint32_t>::max());
  if (const auto runs = doc.find("runs"); runs == doc.end() || !runs->is_array()) {
    throw std::invalid_argument("runs: expected a list");
  }
  if (const auto points = doc.find("points"); points == doc.end() || !points->is_array()) {
    throw std::invalid_argument("points: expected a list");
  }
  check_grid(shard);
  const std::size_t points = shard.points.size();
  const std::size_t strategies = doc.at("strategies").size();
  // points and strategies were held in a file of bounded size: their product fits; with the
  // replications it may not, and then no file could hold the share.
  const std::uint64_t cells = static_cast<std::uint64_t>(points) * strategies;
  const std::uint64_t first = index - 1;
  const bool overflows =
      cells != 0 && replications > std::numeric_limits<std::uint64_t>::max() / cells;
  const std::uint64_t tasks = overflows ? 0 : cells * replications;
  const std::uint64_t share = tasks <= first ? 0 : (tasks - first - 1) / count + 1;
  if (overflows || share != shard.runs.size()) {
    throw scenario_error(
        where + ": " + std::to_string(points) + " points x " + std::to_string(strategies) +
        " strategies x " + std::to_string(replications) + " replications in " +
        std::to_string(count) + " shards would give shard " + std::to_string(index) + " " +
        (overflows ? std::string("more than 2^64") : std::to_string(share)) + " runs; it holds " +
        std::to_string(shard.runs.size()));
  }
  (void)string_at(doc, "scenario");
  (void)string_at(doc, "model");
  (void)string_at(doc, "fingerprint");
  (void)bounded_count_at(doc, "seed", 0, std::numeric_limits<std::uint64_t>::max());
  (void)report::checked::boolean_at(doc, "outage");
  (void)figure_at(doc, "wall_s");
}

// The whole sweep's shape, from the first shard: its identity, points and strategies, and a slot
// for every run. check_shape has bounded it by the runs the shard really holds.
void lay_out_from(const shard_contents& shard, report::scenario_result& result) {
  const nlohmann::json& doc = shard.header;
  result.scenario = doc.at("scenario").get<std::string>();
  result.model = doc.at("model").get<std::string>();
  result.seed = doc.at("seed").get<std::uint64_t>();
  result.fingerprint = doc.at("fingerprint").get<std::string>();
  result.replications = doc.at("replications").get<std::uint32_t>();
  result.outage = doc.at("outage").get<bool>();
  if (const auto about = doc.find("about"); about != doc.end()) {
    result.description = string_at(*about, "description");
    result.source = string_at(*about, "source");
    result.claim = string_at(*about, "claim");
  }
  if (const auto window = doc.find("outage_s"); window != doc.end() && !window->is_null()) {
    if (!window->is_array() || window->size() != 2) {
      throw std::invalid_argument("outage_s: expected [from, to] or null");
    }
    result.outage_s = {figure((*window)[0], "outage_s"), figure((*window)[1], "outage_s")};
  }
  result.sweep = true;
  result.sweep_keys = doc.at("sweep_keys").get<std::vector<std::string>>();
  const auto names = doc.at("strategies").get<std::vector<std::string>>();
  for (const auto& point : shard.points) {
    report::point_result p;
    p.params = point.params;
    for (const auto& name : names) {
      p.strategies.push_back({name, std::vector<report::strategy_summary>(result.replications),
                              std::vector<std::uint8_t>(result.replications, 0)});
    }
    result.points.push_back(std::move(p));
  }
}

// The same grid as the first shard's: axes, values, strategies and replications.
bool same_grid(const shard_contents& shard, const report::scenario_result& result) {
  const nlohmann::json& doc = shard.header;
  if (doc.at("replications").get<std::uint64_t>() != result.replications ||
      doc.at("sweep_keys").get<std::vector<std::string>>() != result.sweep_keys ||
      shard.points.size() != result.points.size()) {
    return false;
  }
  const auto names = doc.at("strategies").get<std::vector<std::string>>();
  if (names.size() != result.points.front().strategies.size()) return false;
  for (std::size_t s = 0; s < names.size(); ++s) {
    if (names[s] != result.points.front().strategies[s].name) return false;
  }
  for (std::size_t p = 0; p < shard.points.size(); ++p) {
    const auto& theirs = shard.points[p].params;
    const auto& ours = result.points[p].params;
    for (std::size_t k = 0; k < theirs.size(); ++k) {
      if (theirs[k].second.toml != ours[k].second.toml ||
          theirs[k].second.text != ours[k].second.text ||
          theirs[k].second.type != ours[k].second.type) {
        return false;
      }
    }
  }
  return true;
}

// The runs of one shard into their slots.
void add_runs(shard_contents& shard, const std::string& where, report::scenario_result& result) {
  result.wall_s += shard.header.at("wall_s").get<double>();
  for (placed_run& run : shard.runs) {
    if (run.point >= result.points.size() ||
        run.strategy >= result.points[run.point].strategies.size() ||
        run.replication >= result.replications) {
      throw scenario_error(where + ": a run outside the sweep's grid");
    }
    report::sweep_cell& cell = result.points[run.point].strategies[run.strategy];
    if (cell.ran[run.replication] != 0) throw scenario_error(where + ": a run given twice");
    run.summary.name = cell.name;
    result.events += run.summary.events;
    cell.runs[run.replication] = std::move(run.summary);
    cell.ran[run.replication] = 1;
  }
  shard.runs.clear();
  shard.runs.shrink_to_fit();
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
      const shard_contents shard = read_shard(file);
      seen.insert(shard.header.at("shard").at("index").get<std::uint64_t>());
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

// The scenario the shards carry, loaded again: their fingerprint must be its fingerprint, and
// their grid (axes, values, strategies, replications) the one it gives. So a shard whose figures
// or points were edited by hand, or that names another scenario, is refused before any output.
void check_against_scenario(const merged_sweep& merged, const std::string& where) {
  const report::scenario_result& r = merged.result;
  const std::string prefix = where + ": the scenario it carries";
  std::optional<scenario> loaded;
  try {
    loaded.emplace(scenario::load({merged.inputs.scenario_path, merged.inputs.scenario_toml},
                                  merged.inputs.sets));
    loaded->set_seed(r.seed);
  } catch (const std::exception& e) {
    throw scenario_error(prefix + " does not load: " + escape_controls(e.what()));
  }
  const scenario& sc = *loaded;
  if (sc.fingerprint() != r.fingerprint) {
    throw scenario_error(prefix + " has fingerprint " + sc.fingerprint() + ", not the shards' " +
                         escape_controls(r.fingerprint));
  }
  const auto differs = [&](const std::string& what) {
    return scenario_error(prefix + " gives other " + what + " than the shards hold");
  };
  if (sc.name() != r.scenario || sc.model() != r.model) throw differs("a name or model");
  if (sc.replications() != r.replications) throw differs("replications");
  std::vector<std::string> keys;
  for (const auto& axis : sc.axes()) keys.push_back(axis.key);
  if (keys != r.sweep_keys) throw differs("axes");
  if (sc.point_count() != r.points.size()) throw differs("points");
  for (std::size_t p = 0; p < r.points.size(); ++p) {
    const sweep_point point = sc.point(p);
    for (std::size_t k = 0; k < point.params.size(); ++k) {
      const report::sweep_value& ours = *point.params[k].second;
      const report::sweep_value& theirs = r.points[p].params[k].second;
      if (ours.toml != theirs.toml || ours.text != theirs.text || ours.type != theirs.type) {
        throw differs("values (point " + std::to_string(p + 1) + ")");
      }
    }
  }
  const auto& strategies = sc.strategies();
  if (strategies.size() != r.points.front().strategies.size()) throw differs("strategies");
  for (std::size_t s = 0; s < strategies.size(); ++s) {
    if (strategies[s].name() != r.points.front().strategies[s].name) throw differs("strategies");
  }
}

}  // namespace

report::scenario_result merge_shards(const std::vector<std::filesystem::path>& inputs) {
  return merge_sweep(inputs).result;
}

merged_sweep merge_sweep(const std::vector<std::filesystem::path>& inputs,
                         std::uint64_t memory_limit) {
  merged_sweep merged;
  report::scenario_result& result = merged.result;
  std::optional<nlohmann::json> first_inputs;  // of the lowest shard index that has them
  std::map<std::uint32_t, std::string> seen;   // shard index -> its file
  std::uint32_t count = 0;
  const std::vector<std::filesystem::path> files = shard_files(inputs);
  for (const auto& file : files) {
    const std::string where = file.string();
    try {
      shard_contents shard = read_shard(file);
      check_shape(shard, where);
      const nlohmann::json& doc = shard.header;
      const auto index = doc.at("shard").at("index").get<std::uint32_t>();
      const auto n = doc.at("shard").at("count").get<std::uint32_t>();
      const auto fingerprint = doc.at("fingerprint").get<std::string>();
      if (seen.empty()) {
        count = n;
        // Fewer files than shards: some are missing, and the grid (which the count bounds) is
        // not allocated.
        if (count > files.size()) throw missing_shards(files, count);
        lay_out_from(shard, result);
      } else if (fingerprint != result.fingerprint) {
        throw scenario_error(where + ": a shard of another sweep (scenario " +
                             escape_controls(doc.at("scenario").get<std::string>()) +
                             ", fingerprint " + escape_controls(fingerprint) +
                             "; the first file's is " + escape_controls(result.fingerprint) + ")");
      } else if (n != count) {
        throw scenario_error(where + ": shard " + std::to_string(index) + "/" + std::to_string(n) +
                             " does not fit the others' split into " + std::to_string(count));
      } else if (!same_grid(shard, result)) {
        throw scenario_error(where + ": its points, strategies or replications differ from " +
                             seen.begin()->second + "'s, with the same fingerprint");
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
      add_runs(shard, where, result);
      if (const std::uint64_t rss = memory_limit != 0 ? resident_bytes() : 0; rss > memory_limit) {
        throw memory_limit_error("merging " + std::to_string(files.size()) +
                                 " shard files: the process uses " + format_size(rss) + " after " +
                                 std::to_string(seen.size()) + " of them, over the limit of " +
                                 format_size(memory_limit) + " (--memory-limit)");
      }
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
    check_against_scenario(merged, seen.begin()->second);
  }
  return merged;
}

std::optional<shard_identity> read_shard_identity(const std::filesystem::path& file,
                                                  std::string& why) {
  try {
    const shard_contents contents = read_shard(file);
    check_shape(contents, file.string());
    const nlohmann::json& doc = contents.header;
    return shard_identity{doc.at("fingerprint").get<std::string>(),
                          {doc.at("shard").at("index").get<std::uint32_t>(),
                           doc.at("shard").at("count").get<std::uint32_t>()}};
  } catch (const std::exception& e) {
    why = escape_controls(e.what());
    return std::nullopt;
  }
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
    shard_contents contents = read_shard(found.file);
    const std::string where = found.file.string();
    check_shape(contents, where);
    const nlohmann::json& doc = contents.header;
    const auto index = doc.at("shard").at("index").get<std::uint32_t>();
    const auto count = doc.at("shard").at("count").get<std::uint32_t>();
    const auto theirs = doc.at("fingerprint").get<std::string>();
    if (index != shard.index || count != shard.count) {
      found.why_not = "it names shard " + std::to_string(index) + "/" + std::to_string(count);
      return found;
    }
    if (theirs != fingerprint) {
      found.why_not = "of another sweep (fingerprint " + escape_controls(theirs) + ", this one's " +
                      fingerprint + ")";
      return found;
    }
    // Only its own runs: run t (numbered point by point, strategy by strategy, replication by
    // replication) belongs to shard t mod count + 1; with the count checked by check_shape and
    // no run given twice (add_runs), no run missing either.
    const std::uint64_t strategies = doc.at("strategies").size();
    const std::uint64_t replications = doc.at("replications").get<std::uint64_t>();
    for (const placed_run& run : contents.runs) {
      if (run.point >= contents.points.size() || run.strategy >= strategies ||
          run.replication >= replications) {
        found.why_not = "it holds a run outside the sweep's grid";
        return found;
      }
      const std::uint64_t task =
          (run.point * strategies + run.strategy) * replications + run.replication;
      if (task % count != index - 1) {
        found.why_not = "it holds a run of another shard";
        return found;
      }
    }
    // Every run it must hold, placed as the merge places them.
    report::scenario_result scratch;
    lay_out_from(contents, scratch);
    add_runs(contents, where, scratch);
    found.complete = true;
  } catch (const std::exception& e) {
    found.why_not = escape_controls(e.what());
  }
  return found;
}

}  // namespace backoff::sim
