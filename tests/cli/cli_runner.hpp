// Runs the built `backoff` executable as a user would and captures what it prints, so that CLI
// tests assert on exit statuses, stdout and stderr. The path comes from the build
// (BACKOFF_CLI_PATH).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace backoff::test {

struct cli_result {
  int status = -1;
  std::string out;
  std::string err;

  // Lines of stderr, without the final newline's empty line.
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// An empty scratch folder for one test: TMPDIR/backoff-<kind>-<name>-<pid> (not yet created).
inline std::filesystem::path fresh_dir(const std::string& kind, const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("backoff-" + kind + "-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The scratch folder of the running test (TMPDIR/backoff-KIND-SUITE-TEST-PID), created empty and
// removed at the end.
class test_scratch {
 public:
  explicit test_scratch(const std::string& kind) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "-" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = fresh_dir(kind, name);
    std::filesystem::create_directories(dir_);
  }
  test_scratch(const test_scratch&) = delete;
  test_scratch& operator=(const test_scratch&) = delete;
  ~test_scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path operator/(const std::string& file) const { return dir_ / file; }
  std::string read(const std::string& file) const { return slurp(dir_ / file); }
  bool has(const std::string& file) const { return std::filesystem::exists(dir_ / file); }
  // A sub-folder, created.
  std::filesystem::path sub(const std::string& name) const {
    std::filesystem::create_directories(dir_ / name);
    return dir_ / name;
  }
  // `sh -c SCRIPT` run in this folder, so that SCRIPT can name its files relatively.
  std::vector<std::string> sh(const std::string& script) const {
    return {"sh", "-c", "cd " + shell_quote(dir_.string()) + " || exit 99; " + script};
  }

 private:
  std::filesystem::path dir_;
};

// Runs `backoff ARGS...` with stdin from /dev/null.
inline cli_result run_cli(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path dir =
      fs::temp_directory_path() /
      ("backoff-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(dir);
  std::string command = shell_quote(BACKOFF_CLI_PATH);
  for (const auto& a : args) command += " " + shell_quote(a);
  command += " </dev/null >" + shell_quote((dir / "out").string()) + " 2>" +
             shell_quote((dir / "err").string());
  const int raw = std::system(command.c_str());
  cli_result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

}  // namespace backoff::test
