// SPDX-License-Identifier: Apache-2.0
// The report that advises (issue 23): the ranking's rule and its sentences on hand-built results,
// and report.html drawn from hand-built results: a ranking table with units leads it, hostile
// text from a scenario file stays text, more than four strategies become small multiples, the
// window chart tells cwnd from ssthresh by colour, and a metastable map gets its phase chart and
// boundary table instead of a ranking.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/plots.hpp"
#include "report/ranking.hpp"
#include "report/result.hpp"

namespace {

namespace fs = std::filesystem;
namespace report = backoff::report;

report::strategy_summary advice_strategy(const std::string& name, std::uint64_t completed,
                                         double attempts_per_operation, double p99) {
  report::strategy_summary s;
  s.name = name;
  s.operations = 1000;
  s.completed = completed;
  s.attempts = static_cast<std::uint64_t>(attempts_per_operation * 1000);
  s.attempts_per_operation = attempts_per_operation;
  if (completed > 0) s.latency_s = report::latency_summary{p99 / 10, 0, 0, 0, p99, 0, 0, p99 * 2};
  // A short time series, so the time charts have something to draw.
  s.bucket_width = 1'000'000'000;
  for (int i = 0; i < 20; ++i) {
    report::series_bucket b;
    b.attempts = static_cast<std::uint64_t>(10 + i);
    b.successes = static_cast<std::uint64_t>(5 + i % 3);
    b.in_service = 3 + i % 4;
    s.buckets.push_back(b);
  }
  return s;
}

std::vector<std::string> advice_names(const report::ranking& k) {
  std::vector<std::string> out;
  for (const auto& row : k.rows) out.push_back(row.name);
  return out;
}

std::string advice_slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct advice_dir {
  fs::path path;
  advice_dir() {
    std::string pattern = (fs::temp_directory_path() / "backoff-advice-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~advice_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The sentence of `k` that starts with `prefix`, or "" when it has none.
std::string advice_sentence(const report::ranking& k, const std::string& prefix) {
  for (const auto& s : k.sentences) {
    if (s.rfind(prefix, 0) == 0) return s;
  }
  return "";
}

TEST(ReportRanking, TheNearBestComeFirstCheapestFirstThenTheRestBySuccess) {
  report::scenario_result r;
  r.strategies = {advice_strategy("cheap-but-failing", 600, 1.0, 0.1),
                  advice_strategy("slow", 1000, 1.5, 9.0), advice_strategy("fast", 1000, 3.0, 0.5),
                  advice_strategy("fast-and-cheap", 1000, 2.0, 0.5),
                  // 99.96 % shows as 100.0: within a point of the best, like the others.
                  advice_strategy("almost", 1000, 1.2, 0.2)};
  r.strategies.back().operations = 10000;
  r.strategies.back().completed = 9996;
  r.strategies.push_back(advice_strategy("nothing-completed", 0, 1.0, 0));
  const report::ranking k = report::rank_plain(r);
  // Within a point of 100 %: by load (1.2, 1.5, 2.0, 3.0); then by success (60 %, 0 %).
  EXPECT_EQ(advice_names(k), (std::vector<std::string>{"almost", "slow", "fast-and-cheap", "fast",
                                                       "cheap-but-failing", "nothing-completed"}));
  EXPECT_EQ(k.unit, "s");
  EXPECT_EQ(k.sentences.front(),
            "Recommended: almost: it makes the fewest calls of the strategies within 1 point of "
            "the best success (100.0 %) (100.0 % succeeded, 1.20 attempts per operation, p99 "
            "0.2 s).");
  EXPECT_EQ(advice_sentence(k, "Trade-off"), "") << "almost makes fewer calls than slow";
  // almost beats slow, fast and fast-and-cheap on all three; cheap-but-failing is the cheapest
  // and the fastest; nothing-completed is beaten by it.
  EXPECT_EQ(advice_sentence(k, "Unbeaten"),
            "Unbeaten on success, load and p99 together (no other strategy is at least as good on "
            "all three): almost and cheap-but-failing.");
  std::vector<bool> unbeaten;
  for (const auto& row : k.rows) unbeaten.push_back(row.unbeaten);
  EXPECT_EQ(unbeaten, (std::vector<bool>{true, false, false, false, true, false}));
  ASSERT_EQ(k.sentences.size(), 4u) << "no outage: no survival sentence, no trade-off";
  // The cheapest fails 40 %: the sentence says so and names the cheapest among the good ones.
  const std::string calls = advice_sentence(k, "Fewest calls");
  EXPECT_NE(calls.find("Fewest calls: cheap-but-failing, 1.00 attempts"), std::string::npos)
      << calls;
  EXPECT_NE(calls.find("60.0 % of operations succeeded"), std::string::npos);
  EXPECT_NE(calls.find("almost, 1.20 attempts"), std::string::npos) << calls;
  const std::string tail = advice_sentence(k, "Shortest tail");
  EXPECT_NE(tail.find("Shortest tail: cheap-but-failing, p99 latency 0.1 s"), std::string::npos)
      << tail;
  EXPECT_NE(tail.find("almost, p99 0.2 s"), std::string::npos) << tail;
}

// The AWS jitter study's shape: no backoff at all succeeds as well as full jitter but makes three
// times the calls; the recommendation is the cheap one, not the one a tenth of a point ahead.
TEST(ReportRanking, ATenthOfAPointDoesNotBuyThreeTimesTheCalls) {
  report::scenario_result r;
  r.strategies = {advice_strategy("none", 1000, 3.1, 0.05),
                  advice_strategy("full", 998, 1.05, 0.09)};
  const report::ranking k = report::rank_plain(r);
  EXPECT_EQ(advice_names(k), (std::vector<std::string>{"full", "none"}));
  EXPECT_EQ(advice_sentence(k, "Trade-off"), "");
  // Neither beats the other on all three: none has the shorter tail.
  EXPECT_EQ(advice_sentence(k, "Unbeaten"),
            "Unbeaten on success, load and p99 together (no other strategy is at least as good on "
            "all three): full and none.");
}

// retry-layers' shape: retrying at every layer succeeds most but multiplies the calls; when the
// first makes more than twice the calls of the second, the report says what they buy.
TEST(ReportRanking, AWinnerThatMakesTwiceTheCallsSaysTheTradeOff) {
  report::scenario_result r;
  r.strategies = {advice_strategy("top-only", 900, 1.5, 0.3),
                  advice_strategy("every-layer", 995, 9.6, 0.8)};
  const report::ranking k = report::rank_plain(r);
  EXPECT_EQ(advice_names(k), (std::vector<std::string>{"every-layer", "top-only"}));
  EXPECT_EQ(advice_sentence(k, "Trade-off"),
            "Trade-off: every-layer makes 6.4 times the calls of top-only (9.60 against 1.50 "
            "attempts per operation); what that buys: 99.5 % of operations succeed against "
            "90.0 %.");
  // At exactly twice, no sentence.
  r.strategies[1] = advice_strategy("every-layer", 995, 3.0, 0.8);
  EXPECT_EQ(advice_sentence(report::rank_plain(r), "Trade-off"), "");
}

TEST(ReportRanking, WithAnOutageRecoveryComesFirstAndIsAnswered) {
  report::scenario_result r;
  r.outage = true;
  r.strategies = {advice_strategy("fixed", 1000, 5.0, 0.2),
                  advice_strategy("exponential", 990, 1.1, 3.0)};
  r.strategies[1].recovery_s = 58.0;
  const report::ranking k = report::rank_plain(r);
  EXPECT_EQ(advice_names(k), (std::vector<std::string>{"exponential", "fixed"}));
  EXPECT_EQ(k.sentences.front(),
            "Recommended: exponential: it recovers after the outage, and it makes the fewest "
            "calls of the strategies within 1 point of the best success (100.0 %) (99.0 % "
            "succeeded, 1.10 attempts per operation, p99 3 s).");
  EXPECT_EQ(advice_sentence(k, "Survives"),
            "Survives the outage: exponential (58 s after the outage). Stays down: fixed.");
  // A recovering strategy that makes more than twice the calls of one that stays down.
  r.strategies[1] = advice_strategy("exponential", 990, 11.0, 3.0);
  r.strategies[1].recovery_s = 58.0;
  EXPECT_EQ(advice_sentence(report::rank_plain(r), "Trade-off"),
            "Trade-off: exponential makes 2.2 times the calls of fixed (11.00 against 5.00 "
            "attempts per operation); what that buys: it recovers after the outage, and fixed "
            "does not.");
}

TEST(ReportRanking, ASweepPointRanksOnItsReplicationsAndTheVerdictCountsFirsts) {
  report::scenario_result r;
  r.sweep = true;
  r.replications = 2;
  for (double x : {0.1, 0.5}) {
    report::point_result p;
    p.params.push_back({"failure_rate", {"0.1", x == 0.1 ? "0.1" : "0.5"}});
    report::sweep_cell a{"retries",
                         {advice_strategy("retries", 1000, 1.2, 1.0),
                          advice_strategy("retries", x == 0.1 ? 1000 : 500, 1.2, 1.0)},
                         {1, 1}};
    report::sweep_cell b{
        "budget",
        {advice_strategy("budget", 900, 1.0, 0.5), advice_strategy("budget", 900, 1.0, 0.5)},
        {1, 1}};
    p.strategies = {a, b};
    r.points.push_back(p);
  }
  // 0.1: retries 100 % vs budget 90 %; 0.5: retries 75 % (mean) vs budget 90 %.
  EXPECT_EQ(advice_names(report::rank_point(r, r.points[0])),
            (std::vector<std::string>{"retries", "budget"}));
  EXPECT_EQ(advice_names(report::rank_point(r, r.points[1])),
            (std::vector<std::string>{"budget", "retries"}));
  EXPECT_EQ(report::verdict(r), "ranked first at 1 of 2 points: retries; 1 of 2 points: budget");
}

// Strategies alike at a point (same success, p99 and attempts within 5 %) are a tie at the top:
// the rule's order among them is no advice, and the verdict does not count it as a win.
TEST(ReportRanking, AlikeStrategiesAreATieNotAWin) {
  report::scenario_result r;
  r.sweep = true;
  for (const bool alike : {true, false}) {
    report::point_result p;
    p.params.push_back({"clients", {alike ? "25" : "400", alike ? "25" : "400"}});
    p.strategies = {
        {"fixed", {advice_strategy("fixed", alike ? 970 : 100, 1.0, 39.7)}, {1}},
        {"ethernet", {advice_strategy("ethernet", 970, 1.02, alike ? 40.2 : 41.0)}, {1}}};
    r.points.push_back(p);
  }
  const report::ranking at25 = report::rank_point(r, r.points[0]);
  EXPECT_EQ(report::tied_first(at25), (std::vector<std::string>{"fixed", "ethernet"}));
  EXPECT_EQ(report::tied_first(report::rank_point(r, r.points[1])),
            (std::vector<std::string>{"ethernet"}));
  // p99 apart by more than 5 %: no longer alike.
  report::ranking_row slower = at25.rows[1];
  slower.p99 = *slower.p99 * 1.2;
  EXPECT_FALSE(report::indistinguishable(at25.rows[0], slower, false));
  EXPECT_EQ(report::verdict(r),
            "ranked first at 1 of 2 points: ethernet; 1 of 2 points: a tie at the top (alike "
            "within 5 %)");
}

TEST(ReportPage, LeadsWithARankingTableAndKeepsHostileTextAsText) {
  advice_dir dir;
  report::scenario_result r;
  r.scenario = "hostile";
  r.model = "m";
  r.description = "<script>alert(1)</script> & more";
  r.claim = "it \"works\" <b>always</b>";
  r.source = "someone's blog";
  const fs::path marker = dir.path / "ran";
  const std::string evil = "x'; system('touch " + marker.string() + "'); print 'DATA";
  r.strategies = {advice_strategy(evil, 1000, 1.0, 0.5), advice_strategy("plain", 900, 2.0, 1.0)};
  (void)report::write_plots(r, dir.path);
  EXPECT_FALSE(fs::exists(marker)) << "a strategy name ran as gnuplot code";
  const std::string html = advice_slurp(dir.path / "report.html");
  const auto table = html.find("<table class=\"ranking\" id=\"ranking\">");
  ASSERT_NE(table, std::string::npos);
  EXPECT_LT(table, html.find("<h2>Charts</h2>")) << "the ranking leads the page";
  for (const char* header : {"success %", "load x (attempts/op)", "p50 (", "p99 (", "max ("}) {
    EXPECT_NE(html.find(header), std::string::npos) << header;
  }
  EXPECT_EQ(html.find("recovered after"), std::string::npos) << "no outage, no recovery column";
  EXPECT_EQ(html.find("calls during the outage"), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"), std::string::npos);
  EXPECT_NE(html.find("it &quot;works&quot; &lt;b&gt;always&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.find("<meta name=\"backoff-verdict\" content=\"first: x&#39;; system("),
            std::string::npos);
  EXPECT_LT(html.size(), 1'000'000u);
}

TEST(ReportPage, MoreThanFourStrategiesAreSmallMultiplesAndTheWindowHasTwoColours) {
  advice_dir dir;
  report::scenario_result r;
  r.scenario = "many";
  r.model = "m";
  for (int i = 0; i < 6; ++i) {
    r.strategies.push_back(advice_strategy("s" + std::to_string(i), 1000, 1.0 + i, 0.5 + i));
  }
  r.strategies[0].has_window = true;
  for (auto& b : r.strategies[0].buckets) {
    b.cwnd = 4;
    b.ssthresh = 8;
  }
  const auto charts = report::write_plots(r, dir.path);
  const std::string rate = advice_slurp(dir.path / "rate.svg");
  EXPECT_NE(rate.find("one panel per strategy"), std::string::npos);
  const std::string window = advice_slurp(dir.path / "window.svg");
  EXPECT_NE(window.find("rgb(  0, 114, 178)"), std::string::npos) << "cwnd in blue";
  EXPECT_NE(window.find("rgb(213,  94,   0)"), std::string::npos) << "ssthresh in vermilion";
  const std::string latency = advice_slurp(dir.path / "latency.svg");
  EXPECT_NE(latency.find("log scale"), std::string::npos);
  // The per-strategy server charts stay on disk; the report shows one small-multiples chart.
  EXPECT_TRUE(fs::exists(dir.path / "server-s0.svg"));
  const std::string html = advice_slurp(dir.path / "report.html");
  EXPECT_NE(html.find("<figure id=\"server\">"), std::string::npos);
  EXPECT_EQ(html.find("<figure id=\"server-s0\">"), std::string::npos);
  EXPECT_NE(html.find("data:image/svg+xml;charset=utf-8,"), std::string::npos);
}

TEST(ReportPage, AMapGetsAPhaseChartAndABoundaryTable) {
  advice_dir dir;
  report::scenario_result r;
  r.scenario = "map";
  r.model = "metastable-map";
  r.maps.push_back({"outage-recovery", "outage-recovery", "fixed", "workload.clients", "clients",
                    "outage.duration", "s"});
  const auto point = [](double load, double lo, double hi, bool always, bool never) {
    report::boundary_point b{"outage-recovery",
                             "outage-recovery",
                             "fixed",
                             load,
                             (lo + hi) / 2,
                             lo,
                             hi,
                             3,
                             7,
                             always,
                             never};
    return b;
  };
  r.boundary = {point(150, 5, 6, false, false), point(200, 4, 4.75, false, false),
                point(300, 0.25, 0.25, true, false), point(100, 20, 20, false, true)};
  const auto charts = report::write_plots(r, dir.path);
  ASSERT_EQ(charts, (std::vector<std::string>{"phase-outage-recovery-fixed"}));
  const std::string svg = advice_slurp(dir.path / "phase-outage-recovery-fixed.svg");
  for (const char* text : {"stays down", "recovers", "always down", "never down",
                           "outage.duration (s)", "workload.clients (clients)"}) {
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  }
  const std::string html = advice_slurp(dir.path / "report.html");
  EXPECT_NE(html.find("id=\"boundary\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"ranking\""), std::string::npos);
  EXPECT_NE(html.find("the smallest trigger that keeps it down is 4.38 s"), std::string::npos);
}

// Two strategies mapped over one scenario share its phase chart, and the report and the index
// line compare them load by load.
TEST(ReportPage, TwoStrategiesOfAMapShareAPhaseChartAndAreCompared) {
  advice_dir dir;
  report::scenario_result r;
  r.scenario = "map";
  r.model = "metastable-map";
  for (const char* strategy : {"fixed", "exponential"}) {
    r.maps.push_back({"outage-recovery", "outage-recovery", strategy, "workload.clients", "clients",
                      "outage.duration", "s"});
  }
  const auto point = [](const char* strategy, double load, double lo, double hi, bool never) {
    return report::boundary_point{"outage-recovery",
                                  "outage-recovery",
                                  strategy,
                                  load,
                                  (lo + hi) / 2,
                                  lo,
                                  hi,
                                  3,
                                  7,
                                  false,
                                  never};
  };
  r.boundary = {
      point("fixed", 150, 5, 6, false),         point("fixed", 200, 4, 4.75, false),
      point("fixed", 300, 2.5, 3.25, false),    point("exponential", 150, 25, 25, true),
      point("exponential", 200, 13, 25, false), point("exponential", 300, 2.5, 3.25, false)};
  const auto charts = report::write_plots(r, dir.path);
  ASSERT_EQ(charts, (std::vector<std::string>{"phase-outage-recovery"}));
  const std::string svg = advice_slurp(dir.path / "phase-outage-recovery.svg");
  for (const char* text : {"fixed: boundary", "exponential: boundary",
                           "exponential: never down (the largest trigger recovers)"}) {
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  }
  // 300 clients tip at the same trigger: exponential is later at two of the three loads.
  const std::string expected =
      "outage-recovery: exponential survives a longer trigger than fixed at 2 of 3 loads";
  EXPECT_EQ(report::verdict(r), expected);
  const std::string html = advice_slurp(dir.path / "report.html");
  EXPECT_NE(html.find(expected + " (at workload.clients = 150 clients: fixed 5.5 s, exponential "
                                 "none up to 25 s)."),
            std::string::npos);
}

// Every number of a column in one unit and one format: never 5.00e-04 beside 1.
TEST(ReportColumns, ShareAUnitAndAFormat) {
  const report::number_column mixed = report::time_column({0.0005, 1.0, 0.25}, "s");
  EXPECT_EQ(mixed.unit, "s");
  EXPECT_EQ(mixed(0.0005), "0.0005");
  EXPECT_EQ(mixed(1.0), "1.0000");
  const report::number_column fast = report::time_column({0.0141, 0.0179, 0.8049}, "s");
  EXPECT_EQ(fast.unit, "ms");
  EXPECT_EQ(fast(0.0141), "14.1");
  EXPECT_EQ(fast(0.8049), "804.9");
  const report::number_column tiny = report::time_column({0.00042, 0.0000123}, "s");
  EXPECT_EQ(tiny.unit, "µs");
  EXPECT_EQ(tiny(0.00042), "420.0");
  EXPECT_EQ(tiny(0.0000123), "12.3");
  const report::number_column ticks = report::time_column({3, 120}, "ticks");
  EXPECT_EQ(ticks.unit, "ticks");
  EXPECT_EQ(ticks(120), "120");
  // Loads shown exactly with the fewest decimals that do it.
  const report::number_column loads = report::plain_column({5, 7.5, 9.5});
  EXPECT_EQ(loads(5), "5.0");
  EXPECT_EQ(loads(7.5), "7.5");
  EXPECT_EQ(report::plain_column({150, 300})(150), "150");
  EXPECT_EQ(loads(std::numeric_limits<double>::quiet_NaN()), "-");
}

// An outage's ranking shows how long each strategy took to recover and the calls it sent while
// the server was out, not a yes that every strategy shares.
TEST(ReportPage, AnOutageShowsTheTimeToRecoverAndTheCallsDuringIt) {
  advice_dir dir;
  report::scenario_result r;
  r.scenario = "outage";
  r.model = "m";
  r.outage = true;
  r.outage_s = std::pair{2.0, 4.0};
  const auto with_series = [](report::strategy_summary s, std::optional<double> recovery,
                              std::uint64_t per_bucket) {
    s.recovery_s = recovery;
    s.buckets.clear();
    s.bucket_width = 1'000'000'000;  // 1 s
    s.seconds_per_unit = 1e-9;
    for (int i = 0; i < 6; ++i) s.buckets.push_back({.attempts = per_bucket});
    return s;
  };
  r.strategies = {with_series(advice_strategy("storm", 1000, 3.0, 0.5), std::nullopt, 900),
                  with_series(advice_strategy("calm", 1000, 1.1, 0.5), 0.25, 40)};
  const report::ranking k = report::rank_plain(r);
  ASSERT_EQ(k.rows.size(), 2U);
  EXPECT_EQ(k.rows[0].name, "calm");
  EXPECT_EQ(k.rows[0].outage_attempts, 80.0);  // buckets starting at 2 s and 3 s
  EXPECT_EQ(k.rows[1].outage_attempts, 1800.0);
  (void)report::write_plots(r, dir.path);
  const std::string html = advice_slurp(dir.path / "report.html");
  EXPECT_NE(html.find("recovered after (ms)</th>"), std::string::npos);
  EXPECT_NE(html.find("calls during the outage</th>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">250</td><td class=\"num\">80</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">never</td><td class=\"num\">1800</td>"),
            std::string::npos);
}

}  // namespace
