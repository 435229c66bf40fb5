#include "scenario_files.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace backoff::cli {

sim::scenario_source resolve_scenario(const std::string& arg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(arg, ec)) {
    std::ifstream in(arg, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw sim::scenario_error(arg + ": cannot read");
    return {arg, text.str()};
  }
  for (const auto& s : sim::builtin_scenarios()) {
    if (s.path == "builtin/" + arg + ".toml" || s.path == "builtin/" + arg) return s;
  }
  std::string known;
  for (const auto& s : sim::builtin_scenarios()) {
    const auto name = std::filesystem::path(s.path).stem().string();
    known += (known.empty() ? "" : ", ") + name;
  }
  throw sim::scenario_error(
      arg + ": no such file, and not a built-in scenario (built-in: " + known + ")");
}

}  // namespace backoff::cli
