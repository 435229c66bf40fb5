// SPDX-License-Identifier: Apache-2.0
// Scratch files for tests: a folder per test under $TMPDIR that is removed however the test
// ends (a failed ASSERT included), and small file helpers. Tests leave nothing behind in $TMPDIR;
// `make test` checks it.
//
//   const backoff::test::test_scratch scratch("sim");   // TMPDIR/backoff-sim-SUITE-TEST-PID
//   run(..., scratch / "summary.json");
//   EXPECT_NE(scratch.read("summary.json"), "");
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace backoff::test {

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The scratch folder of the running test, TMPDIR/backoff-KIND-SUITE-TEST[-LABEL]-PID, created
// empty and removed with everything in it when this object goes (a failed ASSERT included).
// Movable, so a helper can return it with what it ran; a test that needs two folders gives them
// labels.
class test_scratch {
 public:
  explicit test_scratch(const std::string& kind, const std::string& label = "") {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info == nullptr ? std::string("outside-a-test")
                                       : std::string(info->test_suite_name()) + "-" + info->name();
    if (!label.empty()) name += "-" + label;
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = std::filesystem::temp_directory_path() /
           ("backoff-" + kind + "-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  test_scratch(test_scratch&& other) noexcept : dir_(std::move(other.dir_)) { other.dir_.clear(); }
  test_scratch& operator=(test_scratch&& other) noexcept {
    if (this != &other) {
      remove();
      dir_ = std::move(other.dir_);
      other.dir_.clear();
    }
    return *this;
  }
  test_scratch(const test_scratch&) = delete;
  test_scratch& operator=(const test_scratch&) = delete;
  ~test_scratch() { remove(); }

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
  void remove() noexcept {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

// True once a run writing into `out` has begun its clients.csv: the file grows under a hidden
// temporary name (.clients.csv.backoff-tmp-N) until the run ends and it is renamed into place.
inline bool clients_csv_begun(const std::filesystem::path& out) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(out, ec)) {
    if (e.path().filename().string().rfind(".clients.csv.backoff-tmp-", 0) == 0) return true;
  }
  return false;
}

}  // namespace backoff::test
