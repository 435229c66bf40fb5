// SPDX-License-Identifier: Apache-2.0
// `backoff delays --plot PREFIX` (issue 6, seed 004's two figures): the usual output, plus delay
// vs retry number drawn linear and log as PNG and SVG; a bad prefix or a plot too large to draw
// fails with one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::test::run_cli;
using backoff::test::slurp;

struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "backoff-delays-plot-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(DelaysPlotCli, DrawsLinearAndLogChartsAndStillPrints) {
  temp_dir dir;
  const auto prefix = (dir.path / "sub" / "exp").string();
  const auto r = run_cli({"delays", "--policy", "exponential(initial=100ms, max=10s, jitter=full)",
                          "--attempts", "12", "--runs", "3", "--format", "csv", "--plot", prefix});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("run,attempt,delay_s\n", 0), 0u);
  for (const char* name : {"exp", "exp-log"}) {
    const std::string png = slurp(dir.path / "sub" / (std::string(name) + ".png"));
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << name;
    const std::string svg = slurp(dir.path / "sub" / (std::string(name) + ".svg"));
    EXPECT_NE(svg.find("<svg"), std::string::npos) << name;
    EXPECT_NE(svg.find("run 3"), std::string::npos) << name;  // one line per run, in the legend
  }
}

TEST(DelaysPlotCli, TooManyPointsIsAUsageError) {
  temp_dir dir;
  const auto r = run_cli({"delays", "--policy", "exponential(initial=1s)", "--attempts", "1000",
                          "--runs", "1000", "--plot", (dir.path / "x").string()});
  EXPECT_EQ(r.status, 2);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("--plot"), std::string::npos);
  EXPECT_TRUE(r.out.empty());
}

TEST(DelaysPlotCli, UnwritablePrefixFailsWithOneLine) {
  const auto r = run_cli({"delays", "--policy", "exponential(initial=1s)", "--attempts", "3",
                          "--plot", "/proc/no-such-dir/x"});
  EXPECT_EQ(r.status, 1);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("backoff delays: ", 0), 0u) << r.err;
}

}  // namespace
