// SPDX-License-Identifier: Apache-2.0
// Charts and report.html (SPEC 2.3, issue 6): the charts the data supports are drawn as real PNG
// and SVG files, report.html embeds every one of them and needs nothing outside itself, and a
// missing or failing gnuplot is one clear error line, not a crash.
#include "report/plots.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "report/summary.hpp"
#include "scratch.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace fs = std::filesystem;
namespace sim = backoff::sim;
namespace report = backoff::report;
using backoff::test::slurp;

// Seed 003's model, small: two strategies, one with a client window.
const std::string burst = R"toml(scenario = "small-burst"
model = "one-client-burst"
seed = 3
[workload]
operations = 150
rate_per_s = 1000
[server]
max_busy = 20
[[strategy]]
name = "exponential-full"
policy = "exponential(initial=50ms, factor=2, max=30s, jitter=full)"
[[strategy]]
name = "aimd-reno-0.5"
window = "aimd(initial=10, ssthresh=1024, decrease=0.5, variant=reno)"
)toml";

const std::string small_sweep = R"toml(scenario = "small-sweep"
model = "one-client-burst"
replications = 2
[sweep]
workload.operations = [50, 100]
[workload]
rate_per_s = 1000
[server]
max_busy = 20
[[strategy]]
name = "full"
policy = "exponential(initial=50ms, factor=2, max=30s, jitter=full)"
[[strategy]]
name = "none"
policy = "exponential(initial=50ms, factor=2, max=30s, jitter=none)"
)toml";

struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "backoff-plots-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct run_in_dir {
  temp_dir dir;
  report::scenario_result result;
  explicit run_in_dir(const std::string& toml) {
    sim::scenario sc = sim::scenario::load({"test.toml", toml});
    sim::run_options options;
    options.out = dir.path;
    options.threads = 1;
    result = sim::run_scenario(sc, options);
  }
};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Every chart is a PNG (magic bytes) and an SVG (root element) with content.
void expect_chart_files(const fs::path& dir, const std::vector<std::string>& charts) {
  for (const auto& c : charts) {
    const std::string png = slurp(dir / (c + ".png"));
    ASSERT_GT(png.size(), 1000u) << c;
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << c;
    const std::string svg = slurp(dir / (c + ".svg"));
    EXPECT_NE(svg.find("<svg"), std::string::npos) << c;
    EXPECT_NE(svg.find("</svg>"), std::string::npos) << c;
  }
}

// One embedded image per chart, and nothing that would need a network or a sibling file.
void expect_self_contained_report(const fs::path& dir, const std::vector<std::string>& charts) {
  const std::string html = slurp(dir / "report.html");
  ASSERT_FALSE(html.empty());
  // Plain scanning: std::regex recurses per character and overflows the stack on a data: URI.
  const auto attribute_values = [&](const std::string& tag, const std::string& attribute) {
    std::vector<std::string> values;
    for (std::size_t at = html.find(tag); at != std::string::npos; at = html.find(tag, at + 1)) {
      const std::size_t end = html.find('>', at);
      const std::size_t a = html.find(" " + attribute + "=\"", at);
      if (a == std::string::npos || a > end) continue;
      const std::size_t begin = a + attribute.size() + 3;
      values.push_back(html.substr(begin, html.find('"', begin) - begin));
    }
    return values;
  };
  // Every chart but those kept on disk only (a log twin, the same data as another: issue 23's
  // 1 MB page), each listed by name when not shown.
  const auto sources = attribute_values("<img", "src");
  EXPECT_LE(sources.size(), charts.size());
  EXPECT_GE(sources.size(), charts.size() / 2);
  for (const auto& c : charts) {
    const bool shown = html.find("<figure id=\"" + c + "\">") != std::string::npos;
    const bool listed =
        html.find(c + ", ") != std::string::npos || html.find(c + ".</p>") != std::string::npos;
    EXPECT_TRUE(shown || listed) << c;
  }
  for (const auto& src : sources) {
    EXPECT_EQ(src.rfind("data:image/svg+xml;charset=utf-8,", 0), 0u);
    EXPECT_EQ(src.find_first_of("#\n"), std::string::npos);  // a fragment or a dropped newline
  }
  for (const auto& href : attribute_values("<a", "href")) {
    EXPECT_EQ(href.rfind('#', 0), 0u) << href;  // in-page anchors only
  }
  // Outside the charts (an SVG names its XML namespaces with http URIs, which nothing fetches).
  std::string page = html;
  for (const auto& src : sources) {
    if (const auto at = page.find(src); at != std::string::npos) page.erase(at, src.size());
  }
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  // Inside them: nothing to fetch either (no external image or stylesheet).
  for (const auto& src : sources) {
    EXPECT_EQ(src.find("xlink:href='http"), std::string::npos);
    EXPECT_EQ(src.find("@import"), std::string::npos);
  }
}

TEST(Plots, DrawsEveryChartOfAPlainRunAndAReportThatNeedsNothingElse) {
  run_in_dir run(burst);
  const auto charts = report::write_plots(
      run.result, run.dir.path,
      {.scenario_path = "test.toml", .scenario_toml = burst, .sets = {"server.max_busy=20"}});
  for (const char* expected :
       {"rate", "rate-log", "latency", "requests", "clients-latency", "clients-attempts",
        "server-exponential-full", "server-aimd-reno-0.5", "window"}) {
    EXPECT_TRUE(contains(charts, expected)) << expected;
  }
  EXPECT_FALSE(contains(charts, "goodput"));  // no outage in this model
  expect_chart_files(run.dir.path, charts);
  expect_self_contained_report(run.dir.path, charts);
  const std::string html = slurp(run.dir.path / "report.html");
  EXPECT_NE(html.find("small-burst"), std::string::npos);
  EXPECT_NE(html.find("aimd-reno-0.5"), std::string::npos);  // the comparison table
  EXPECT_NE(html.find("max_busy = 20"), std::string::npos);  // the parameters
  EXPECT_NE(html.find("server.max_busy=20"), std::string::npos);
  // The legend names strategies exactly as the summary does.
  EXPECT_NE(slurp(run.dir.path / "rate.svg").find("aimd-reno-0.5"), std::string::npos);
}

TEST(Plots, PerOperationChartsReadNamesThatCsvHadToQuote) {
  // clients.csv quotes a name with a comma or a quote (RFC 4180); the per-operation charts read
  // it back through the same CSV rules, so the strategy still has its curve.
  std::string toml = burst;
  for (const char* plain : {"name = \"exponential-full\"", "name = \"aimd-reno-0.5\""}) {
    const auto at = toml.find(plain);
    ASSERT_NE(at, std::string::npos) << plain;
    toml.replace(at, std::string(plain).size(),
                 std::string(plain) == "name = \"exponential-full\""
                     ? "name = \"full, \\\"quoted\\\"\""
                     : "name = \"second,one\"");
  }
  run_in_dir run(toml);
  ASSERT_EQ(run.result.strategies.size(), 2u);
  const auto charts = report::write_plots(run.result, run.dir.path);
  ASSERT_TRUE(contains(charts, "clients-latency"));
  const std::string svg = slurp(run.dir.path / "clients-latency.svg");
  EXPECT_NE(svg.find("full, \"quoted\""), std::string::npos);
  EXPECT_NE(svg.find("second,one"), std::string::npos);
}

TEST(Plots, AnOutageRunGetsGoodputConcurrencyAndEachPolicysDelays) {
  const std::string outage = R"toml(scenario = "small-outage"
model = "outage-recovery"
[workload]
clients = 200
[outage]
start = "20s"
duration = "5s"
[run]
duration = "60s"
[[strategy]]
name = "fixed"
policy = "constant(initial=100ms)"
[[strategy]]
name = "exponential"
policy = "smira-go"
)toml";
  run_in_dir run(outage);
  const auto charts = report::write_plots(run.result, run.dir.path);
  for (const char* expected : {"goodput", "concurrency", "delays", "delays-log"}) {
    EXPECT_TRUE(contains(charts, expected)) << expected;
  }
  EXPECT_FALSE(contains(charts, "window"));
  expect_chart_files(run.dir.path, charts);
  // The delay chart draws each strategy's policy: the exponential one reaches its 5 min cap.
  const std::string delays = slurp(run.dir.path / "delays.svg");
  EXPECT_NE(delays.find("exponential"), std::string::npos);
  EXPECT_NE(delays.find("fixed"), std::string::npos);
}

TEST(Plots, SvgAndReportAreTheSameBytesEveryTime) {
  run_in_dir run(burst);
  report::write_plots(run.result, run.dir.path);
  const std::string svg = slurp(run.dir.path / "latency.svg");
  const std::string html = slurp(run.dir.path / "report.html");
  report::write_plots(run.result, run.dir.path);
  EXPECT_EQ(slurp(run.dir.path / "latency.svg"), svg);
  EXPECT_EQ(slurp(run.dir.path / "report.html"), html);
}

TEST(Plots, ChartsASweepAgainstTheSweptKey) {
  run_in_dir run(small_sweep);
  const auto charts = report::write_plots(run.result, run.dir.path);
  for (const char* expected : {"sweep-completed", "sweep-attempts", "sweep-makespan_s"}) {
    EXPECT_TRUE(contains(charts, expected)) << expected;
  }
  EXPECT_FALSE(contains(charts, "rate"));
  expect_chart_files(run.dir.path, charts);
  expect_self_contained_report(run.dir.path, charts);
  // Replications: error bars.
  EXPECT_NE(slurp(run.dir.path / "sweep-attempts.svg").find("workload.operations"),
            std::string::npos);
}

TEST(Plots, MissingGnuplotIsOneClearLine) {
  run_in_dir run(burst);
  temp_dir empty;
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", empty.path.c_str(), 1);
  std::string message;
  try {
    report::write_plots(run.result, run.dir.path);
  } catch (const report::plot_error& e) {
    message = e.what();
  }
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_NE(message.find("gnuplot"), std::string::npos) << message;
  EXPECT_NE(message.find("not found"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(Plots, FailingGnuplotIsOneClearLine) {
  run_in_dir run(burst);
  std::string message;
  try {
    report::write_plots(run.result, run.dir.path, {}, {.gnuplot = "false"});
  } catch (const report::plot_error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("gnuplot failed (exit status 1)"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(Plots, DelayPlotsAreLinearAndLog) {
  temp_dir dir;
  report::write_delay_plots({{0.05, 0.1, 0.2, 0.4, 0.8}, {0.01, 0.2, 0.1, 0.3, 1.5}},
                            "exponential(initial=50ms)", dir.path / "delays");
  expect_chart_files(dir.path, {"delays", "delays-log"});
}

}  // namespace
