// SPDX-License-Identifier: Apache-2.0
// HdrHistogram-compatible histograms and interval logs (report/hdr_log.hpp): the layout keeps
// every value within 0.1 %, the encoding round-trips, a log written by HdrHistogram's own Java
// writer reads back with its counts and percentiles, and malformed input is refused by name.
#include "report/hdr_log.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace {

using backoff::report::base64_decode;
using backoff::report::base64_encode;
using backoff::report::hdr_histogram;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(HdrHistogram, PercentilesAreWithinATenthOfAPercentOfTheExactOnes) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> latency(9.0, 1.5);  // microseconds, 1e2 .. 1e6
  hdr_histogram h;
  std::vector<std::int64_t> values;
  for (int i = 0; i < 200'000; ++i) {
    const auto v = static_cast<std::int64_t>(latency(rng)) + 1;
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  ASSERT_EQ(h.count(), values.size());
  for (const double q : {0.5, 0.9, 0.99, 0.999, 0.9999, 1.0}) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
    const auto exact = static_cast<double>(values[rank - 1]);
    const auto got = static_cast<double>(h.value_at_quantile(q));
    EXPECT_GE(got, exact) << q;  // the highest value of the exact one's bucket
    EXPECT_LE(got, exact * 1.001 + 1) << q;
  }
  EXPECT_GE(h.max(), values.back());
  EXPECT_LE(static_cast<double>(h.max()), static_cast<double>(values.back()) * 1.001 + 1);
}

TEST(HdrHistogram, SmallValuesAreExactAndOutOfRangeOnesClamped) {
  hdr_histogram h(10'000);
  for (std::int64_t v = 0; v < 2048; ++v) h.record(v);
  EXPECT_EQ(h.value_at_quantile(1.0), 2047);
  EXPECT_EQ(h.value_at_quantile(0.5), 1023);
  h.record(-5);       // as 0
  h.record(1 << 30);  // as the highest trackable value
  EXPECT_EQ(h.count(), 2050u);
  EXPECT_GE(h.max(), 10'000);
  EXPECT_LE(h.max(), 10'007);
}

TEST(HdrHistogram, TheCompressedEncodingRoundTrips) {
  hdr_histogram h;
  h.record(1);
  h.record(2, 3);
  h.record(999'999, 5);
  h.record(3'000'000'000, 2);
  const hdr_histogram back =
      backoff::report::decode_compressed(backoff::report::encode_compressed(h));
  EXPECT_EQ(back.count(), h.count());
  EXPECT_EQ(back.max(), h.max());
  for (const double q : {0.0, 0.1, 0.3, 0.5, 0.8, 0.95, 1.0}) {
    EXPECT_EQ(back.value_at_quantile(q), h.value_at_quantile(q)) << q;
  }
  const hdr_histogram empty =
      backoff::report::decode_compressed(backoff::report::encode_compressed(hdr_histogram()));
  EXPECT_EQ(empty.count(), 0u);
}

TEST(HdrHistogram, Base64MatchesRfc4648AndRefusesWhatIsNot) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
  EXPECT_THROW(base64_decode("Zm9"), std::invalid_argument);
  EXPECT_THROW(base64_decode("Zm9v!mFy"), std::invalid_argument);
  EXPECT_THROW(base64_decode("Zg==Zg=="), std::invalid_argument);
}

// tests/data/hdr: written by HdrHistogram 2.1.11's HistogramLogWriter (Debian's
// libhdrhistogram-java): interval 1 holds 1..10000 and 7 x 1234567, interval 2 holds 100 x
// 500000, 0 and 2999999999. The expected figures are what that library's getValueAtPercentile and
// getMaxValue printed for the same histograms.
TEST(HdrLog, ALogWrittenByHdrHistogramItselfReadsBack) {
  std::string path = BACKOFF_SOURCE_DIR;
  path += "/tests/data/hdr/written-by-hdrhistogram-java-2.1.11.hlog";
  const auto log = backoff::report::parse_hdr_log(slurp(path));
  EXPECT_DOUBLE_EQ(log.base_epoch_s, 1700000000.0);
  ASSERT_EQ(log.intervals.size(), 2u);
  const hdr_histogram& first = log.intervals[0].histogram;
  EXPECT_EQ(first.count(), 10007u);
  EXPECT_EQ(first.value_at_quantile(0.5), 5007);
  EXPECT_EQ(first.value_at_quantile(0.99), 9911);
  EXPECT_EQ(first.value_at_quantile(0.9999), 1234943);
  EXPECT_EQ(first.max(), 1234943);
  EXPECT_DOUBLE_EQ(log.intervals[1].start_s, 1.0);
  EXPECT_DOUBLE_EQ(log.intervals[1].length_s, 1.0);

  const hdr_histogram all = backoff::report::merge_logs({log});
  EXPECT_EQ(all.count(), 10109u);
  EXPECT_EQ(all.value_at_quantile(0.5), 5055);
  EXPECT_EQ(all.value_at_quantile(0.99), 500223);
  EXPECT_EQ(all.value_at_quantile(0.9999), 1234943);
  EXPECT_EQ(all.max(), 3001024511);
}

// Two generator processes' logs merge into the histogram of all their values.
TEST(HdrLog, LogsOfSeveralProcessesMergeIntoTheWholeHistogram) {
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> fast(1.0 / 2000), slow(1.0 / 90'000);
  hdr_histogram whole;
  std::vector<backoff::report::hdr_log> logs;
  for (int process = 0; process < 2; ++process) {
    std::string text = backoff::report::hdr_log_header(1.7e9 + process, "test");
    for (int second = 0; second < 5; ++second) {
      hdr_histogram interval;
      for (int i = 0; i < 1000; ++i) {
        const auto v = static_cast<std::int64_t>(process == 0 ? fast(rng) : slow(rng));
        interval.record(v);
        whole.record(v);
      }
      text += backoff::report::hdr_log_line(second, 1.0, interval, 1e6);
    }
    logs.push_back(backoff::report::parse_hdr_log(text));
    EXPECT_EQ(logs.back().intervals.size(), 5u);
  }
  const hdr_histogram merged = backoff::report::merge_logs(logs);
  EXPECT_EQ(merged.count(), 10'000u);
  for (const double q : {0.25, 0.5, 0.9, 0.99, 0.9999, 1.0}) {
    EXPECT_EQ(merged.value_at_quantile(q), whole.value_at_quantile(q)) << q;
  }
}

TEST(HdrLog, AMalformedLineIsRefusedByNumber) {
  const std::string header = backoff::report::hdr_log_header(1.7e9, "test");
  const auto refused = [&](const std::string& line) -> std::string {
    try {
      (void)backoff::report::parse_hdr_log(header + line);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  const std::string good = backoff::report::hdr_log_line(0, 1, hdr_histogram(), 1e6);
  EXPECT_EQ(refused(good), "accepted");
  EXPECT_EQ(refused("0.000,1.000\n").rfind("line 6: expected start,length,max,histogram", 0), 0u)
      << refused("0.000,1.000\n");
  EXPECT_NE(refused("x,1.000,0.0,AAAA\n").find("line 6"), std::string::npos);
  EXPECT_NE(refused("0.000,1.000,0.0,AAAAAAAAAAA=\n").find("not a V2 compressed histogram"),
            std::string::npos);
  EXPECT_NE(refused("0.000,1.000,0.0,AAAA\n").find("line 6: histogram encoding: truncated"),
            std::string::npos);
  // A valid header whose zlib stream is cut short.
  const std::string packed = backoff::report::encode_compressed(hdr_histogram());
  const std::string cut = base64_encode(packed.substr(0, packed.size() - 3));
  EXPECT_NE(refused("0.000,1.000,0.0," + cut + "\n").find("line 6: histogram encoding"),
            std::string::npos);
}

}  // namespace
