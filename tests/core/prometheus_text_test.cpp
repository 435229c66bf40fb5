// SPDX-License-Identifier: Apache-2.0
// The one Prometheus text writer: names, escaping, number forms and histograms as the text format
// (version 0.0.4) has them, and retry_metrics rendered through it.
#include "backoff/prometheus_text.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "backoff/hooks.hpp"

namespace {

using backoff::prometheus_type;
using backoff::prometheus_writer;

TEST(PrometheusText, MetricNamesAreLettersDigitsUnderscoresAndColons) {
  EXPECT_TRUE(backoff::is_prometheus_metric_name("backoff_requests_total"));
  EXPECT_TRUE(backoff::is_prometheus_metric_name("_x"));
  EXPECT_TRUE(backoff::is_prometheus_metric_name("job:rate5m"));
  EXPECT_TRUE(backoff::is_prometheus_metric_name("A9"));
  EXPECT_FALSE(backoff::is_prometheus_metric_name(""));
  EXPECT_FALSE(backoff::is_prometheus_metric_name("9lives"));
  EXPECT_FALSE(backoff::is_prometheus_metric_name("a-b"));
  EXPECT_FALSE(backoff::is_prometheus_metric_name("a b"));
  EXPECT_FALSE(backoff::is_prometheus_metric_name("caf\xc3\xa9"));
}

TEST(PrometheusText, LabelValuesEscapeBackslashQuoteAndLineFeed) {
  EXPECT_EQ(backoff::escape_prometheus_label_value("plain"), "plain");
  EXPECT_EQ(backoff::escape_prometheus_label_value(R"(C:\dir)"), R"(C:\\dir)");
  EXPECT_EQ(backoff::escape_prometheus_label_value(R"(say "hi")"), R"(say \"hi\")");
  EXPECT_EQ(backoff::escape_prometheus_label_value("two\nlines"), R"(two\nlines)");
  EXPECT_EQ(backoff::escape_prometheus_label_value("tab\tstays"), "tab\tstays");
}

TEST(PrometheusText, FamilyWritesHelpAndTypeWithTheHelpEscaped) {
  prometheus_writer out;
  out.family("a_total", prometheus_type::counter, R"(Counts "a" in C:\ and
more.)");
  out.family("b", prometheus_type::gauge, "");
  out.family("c_seconds", prometheus_type::histogram, "Time.");
  EXPECT_EQ(out.text(),
            "# HELP a_total Counts \"a\" in C:\\\\ and\\nmore.\n"
            "# TYPE a_total counter\n"
            "# HELP b \n"
            "# TYPE b gauge\n"
            "# HELP c_seconds Time.\n"
            "# TYPE c_seconds histogram\n");
}

TEST(PrometheusText, SamplesHaveBracesOnlyWithLabels) {
  prometheus_writer out;
  out.sample("plain_total", {}, std::uint64_t{7});
  out.sample("req_total", {{"status", "200"}}, std::uint64_t{3});
  out.sample("req_total", {{"method", "GET"}, {"path", "/a\"b\\c\nd"}}, 1.5);
  EXPECT_EQ(out.text(),
            "plain_total 7\n"
            "req_total{status=\"200\"} 3\n"
            "req_total{method=\"GET\",path=\"/a\\\"b\\\\c\\nd\"} 1.5\n");
}

TEST(PrometheusText, CounterAndGaugeAreAFamilyAndOneSample) {
  prometheus_writer out;
  out.counter("n_total", "Things.", std::uint64_t{42});
  out.counter("s_total", "Seconds.", 0.25);
  out.gauge("g", "Level.", -3.0);
  EXPECT_EQ(out.text(),
            "# HELP n_total Things.\n# TYPE n_total counter\nn_total 42\n"
            "# HELP s_total Seconds.\n# TYPE s_total counter\ns_total 0.25\n"
            "# HELP g Level.\n# TYPE g gauge\ng -3\n");
}

// Each number as the sample line has it.
std::string prometheus_sample_value(double value) {
  prometheus_writer out;
  out.sample("x", {}, value);
  std::string line = out.take();
  return line.substr(2, line.size() - 3);
}

TEST(PrometheusText, NumbersAreDecimalShortestAndNamedWhenNotFinite) {
  prometheus_writer out;
  out.sample("u", {}, std::numeric_limits<std::uint64_t>::max());
  out.sample("z", {}, std::uint64_t{0});
  EXPECT_EQ(out.text(), "u 18446744073709551615\nz 0\n");
  EXPECT_EQ(prometheus_sample_value(1.0), "1");
  EXPECT_EQ(prometheus_sample_value(0.1), "0.1");
  EXPECT_EQ(prometheus_sample_value(6.0), "6");
  EXPECT_EQ(prometheus_sample_value(1e-9), "1e-09");
  EXPECT_EQ(prometheus_sample_value(123456789.125), "123456789.125");
  EXPECT_EQ(prometheus_sample_value(1e300), "1e+300");
  EXPECT_EQ(std::stod(prometheus_sample_value(0.1 + 0.2)), 0.1 + 0.2);
  EXPECT_EQ(prometheus_sample_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(prometheus_sample_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(prometheus_sample_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(PrometheusText, HistogramBucketsAreCumulativeAndEndAtInf) {
  prometheus_writer out;
  const std::vector<double> bounds{0.005, 0.1, 1.0};
  const std::vector<std::uint64_t> counts{2, 0, 5, 1};
  out.histogram("lat_seconds", "Latency.", bounds, counts, 3.25);
  EXPECT_EQ(out.text(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{le=\"0.005\"} 2\n"
            "lat_seconds_bucket{le=\"0.1\"} 2\n"
            "lat_seconds_bucket{le=\"1\"} 7\n"
            "lat_seconds_bucket{le=\"+Inf\"} 8\n"
            "lat_seconds_sum 3.25\n"
            "lat_seconds_count 8\n");
}

TEST(PrometheusText, HistogramWithoutBoundsHasOnlyTheInfBucket) {
  prometheus_writer out;
  const std::vector<std::uint64_t> counts{4};
  out.histogram("h", "All.", {}, counts, 0.0);
  EXPECT_EQ(out.text(),
            "# HELP h All.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 4\nh_sum 0\nh_count 4\n");
}

TEST(PrometheusText, HistogramShapeIsChecked) {
  prometheus_writer out;
  const std::vector<double> bounds{1.0, 2.0};
  const std::vector<std::uint64_t> too_few{1, 2};
  const std::vector<std::uint64_t> enough{1, 2, 3};
  const std::vector<double> unordered{2.0, 1.0};
  EXPECT_THROW(out.histogram("h", "", bounds, too_few, 0.0), std::invalid_argument);
  EXPECT_THROW(out.histogram("h", "", unordered, enough, 0.0), std::invalid_argument);
  EXPECT_EQ(out.text(), "");
}

TEST(PrometheusText, BadNamesAreRejectedBeforeAnythingIsWritten) {
  prometheus_writer out;
  EXPECT_THROW(out.family("9lives", prometheus_type::counter, "x"), std::invalid_argument);
  EXPECT_THROW(out.family("", prometheus_type::gauge, "x"), std::invalid_argument);
  EXPECT_THROW(out.sample("a-b", {}, std::uint64_t{1}), std::invalid_argument);
  EXPECT_THROW(out.sample("ok", {{"bad-label", "v"}}, std::uint64_t{1}), std::invalid_argument);
  EXPECT_THROW(out.sample("ok", {{"a:b", "v"}}, 1.0), std::invalid_argument);  // no colons
  EXPECT_THROW(out.counter("a b", "x", 1.0), std::invalid_argument);
  EXPECT_THROW(out.gauge("-", "x", 1.0), std::invalid_argument);
  const std::vector<std::uint64_t> counts{1};
  EXPECT_THROW(out.histogram("1h", "x", {}, counts, 0.0), std::invalid_argument);
  EXPECT_EQ(out.text(), "");
}

TEST(PrometheusText, TakeHandsOverTheTextAndStartsAgain) {
  prometheus_writer out;
  out.sample("a", {}, std::uint64_t{1});
  EXPECT_EQ(out.take(), "a 1\n");
  EXPECT_EQ(out.text(), "");
  out.sample("b", {}, std::uint64_t{2});
  EXPECT_EQ(out.take(), "b 2\n");
}

TEST(PrometheusText, RetryMetricsRenderThroughTheWriter) {
  backoff::retry_metrics metrics;
  metrics.attempts = 7;
  metrics.retries = 4;
  metrics.timeouts = 1;
  metrics.exceptions = 2;
  metrics.wait_nanoseconds = 1'500'000'000;
  metrics.loops[static_cast<std::size_t>(backoff::outcome::succeeded)] = 2;
  metrics.breaker_transitions[static_cast<std::size_t>(backoff::breaker_state::open)] = 3;
  const std::string text = backoff::to_prometheus_text(metrics, "rpc");
  EXPECT_EQ(text.substr(0, text.find("# HELP rpc_loops_total")),
            "# HELP rpc_attempts_total Attempts started by retry loops.\n"
            "# TYPE rpc_attempts_total counter\n"
            "rpc_attempts_total 7\n"
            "# HELP rpc_retries_total Waits before another attempt.\n"
            "# TYPE rpc_retries_total counter\n"
            "rpc_retries_total 4\n"
            "# HELP rpc_attempt_timeouts_total Attempts cancelled at their per-attempt timeout.\n"
            "# TYPE rpc_attempt_timeouts_total counter\n"
            "rpc_attempt_timeouts_total 1\n"
            "# HELP rpc_attempt_exceptions_total Attempts that threw an exception the classifier "
            "retries.\n"
            "# TYPE rpc_attempt_exceptions_total counter\n"
            "rpc_attempt_exceptions_total 2\n"
            "# HELP rpc_retry_wait_seconds_total Time spent waiting to retry.\n"
            "# TYPE rpc_retry_wait_seconds_total counter\n"
            "rpc_retry_wait_seconds_total 1.5\n");
  EXPECT_NE(text.find("# HELP rpc_loops_total Retry loops ended, by outcome.\n"
                      "# TYPE rpc_loops_total counter\n"
                      "rpc_loops_total{outcome=\"succeeded\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# HELP rpc_breaker_transitions_total Circuit breaker transitions, by the "
                      "state entered.\n"
                      "# TYPE rpc_breaker_transitions_total counter\n"
                      "rpc_breaker_transitions_total{to=\"closed\"} 0\n"
                      "rpc_breaker_transitions_total{to=\"open\"} 3\n"
                      "rpc_breaker_transitions_total{to=\"half_open\"} 0\n"),
            std::string::npos)
      << text;
}

}  // namespace
