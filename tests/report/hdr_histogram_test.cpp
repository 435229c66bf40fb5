// SPDX-License-Identifier: Apache-2.0
// The report layer's one latency histogram (report/hdr_histogram.hpp): its precision is a
// parameter, the simulator's 12 bits read percentiles exactly as its recorder always did, and
// only a precision of whole significant digits goes into HdrHistogram's encoding.
#include "report/hdr_histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "report/hdr_log.hpp"

namespace {

using backoff::report::hdr_histogram;
using backoff::report::hdr_precision;
using backoff::report::quantile_rule;

// The simulator's histogram as it was written before it became an hdr_histogram of 12 bits:
// values below 4096 as themselves, above, (e << 11) + (v >> e); a percentile is the middle of its
// bucket at rank max(1, ceil(q n)), never above the largest value.
std::vector<std::int64_t> twelve_bit_reference(const std::vector<std::int64_t>& values,
                                               const std::vector<double>& qs) {
  constexpr int sub_bits = 12;
  std::vector<std::uint32_t> counts;
  std::int64_t largest = 0;
  for (const std::int64_t value : values) {
    const auto v = static_cast<std::uint64_t>(std::max<std::int64_t>(value, 0));
    std::size_t index = static_cast<std::size_t>(v);
    if (v >= (1ULL << sub_bits)) {
      const int e = static_cast<int>(std::bit_width(v)) - sub_bits;
      index = (static_cast<std::size_t>(e) << (sub_bits - 1)) + static_cast<std::size_t>(v >> e);
    }
    if (index >= counts.size()) counts.resize(index + 1, 0);
    ++counts[index];
    largest = std::max(largest, static_cast<std::int64_t>(v));
  }
  const auto value_of = [&](std::size_t index) -> std::int64_t {
    if (index < (std::size_t{1} << sub_bits)) return static_cast<std::int64_t>(index);
    const std::size_t half = std::size_t{1} << (sub_bits - 1);
    const std::size_t e = index / half - 1;
    const std::uint64_t top = index - e * half;
    const std::uint64_t mid = (top << e) + ((std::uint64_t{1} << e) >> 1);
    return std::min(static_cast<std::int64_t>(mid), largest);
  };
  std::vector<std::int64_t> out;
  for (const double q : qs) {
    const auto rank = static_cast<std::uint64_t>(
        std::max(1.0, std::ceil(q * static_cast<double>(values.size()))));
    std::uint64_t seen = 0;
    for (std::size_t index = 0; index < counts.size(); ++index) {
      seen += counts[index];
      if (seen >= rank) {
        out.push_back(value_of(index));
        break;
      }
    }
  }
  return out;
}

TEST(HdrPrecision, SignificantDigitsAreHdrHistogramsSubBucketBits) {
  EXPECT_EQ(hdr_precision::significant_digits(3).bits(), 11);
  EXPECT_EQ(hdr_precision::significant_digits(2).bits(), 8);
  EXPECT_EQ(hdr_precision::significant_digits(5).bits(), 18);
  EXPECT_EQ(hdr_precision::sub_bucket_bits(11).digits(), 3);
  EXPECT_FALSE(hdr_precision::sub_bucket_bits(12).digits().has_value());
  EXPECT_THROW((void)hdr_precision::significant_digits(6), std::invalid_argument);
  EXPECT_THROW((void)hdr_precision::sub_bucket_bits(0), std::invalid_argument);
}

TEST(HdrHistogramRules, TwelveBitsReadTheBucketMiddleAsTheSimulatorsHistogramDid) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> latency(13.0, 2.0);  // nanoseconds, 1e3 .. 1e8 mostly
  std::vector<std::int64_t> values;
  hdr_histogram h(std::numeric_limits<std::int64_t>::max(), hdr_precision::sub_bucket_bits(12));
  for (int i = 0; i < 100'000; ++i) {
    const auto v = static_cast<std::int64_t>(latency(rng)) - 50;  // a few below 0
    values.push_back(v);
    h.record(v);
  }
  const std::vector<double> qs{0.0, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0};
  EXPECT_EQ(h.quantiles(qs, quantile_rule::bucket_middle), twelve_bit_reference(values, qs));
  EXPECT_EQ(h.max_recorded(), *std::max_element(values.begin(), values.end()));
}

TEST(HdrHistogramRules, AddingIntervalsGivesTheWholeRunsCounts) {
  std::mt19937_64 rng(5);
  std::exponential_distribution<double> latency(1.0 / 3000);
  hdr_histogram whole, interval, run;
  for (int second = 0; second < 4; ++second) {
    for (int i = 0; i < 500; ++i) {
      const auto v = static_cast<std::int64_t>(latency(rng));
      whole.record(v);
      interval.record(v);
    }
    run.add(interval);
    interval.reset();
  }
  ASSERT_EQ(run.count(), whole.count());
  ASSERT_EQ(run.indices_used(), whole.indices_used());
  for (std::size_t i = 0; i < whole.indices_used(); ++i) {
    EXPECT_EQ(run.count_at_index(i), whole.count_at_index(i)) << i;
  }
  EXPECT_EQ(run.max(), whole.max());
  const hdr_histogram finer(3'600'000'000, hdr_precision::significant_digits(4));
  EXPECT_THROW(run.add(finer), std::invalid_argument);
}

TEST(HdrHistogramEncoding, OnlyWholeDigitsAreEncodedAndOtherDigitsRoundTrip) {
  hdr_histogram twelve_bits(1'000'000, hdr_precision::sub_bucket_bits(12));
  twelve_bits.record(5);
  EXPECT_THROW((void)backoff::report::encode_compressed(twelve_bits), std::invalid_argument);
  for (const int digits : {1, 2, 4, 5}) {
    hdr_histogram h(1'000'000'000, hdr_precision::significant_digits(digits));
    for (std::int64_t v = 1; v < 500'000'000; v = v * 3 + 7) h.record(v, 2);
    const hdr_histogram back =
        backoff::report::decode_compressed(backoff::report::encode_compressed(h));
    EXPECT_EQ(back.precision(), h.precision()) << digits;
    EXPECT_EQ(back.count(), h.count()) << digits;
    EXPECT_EQ(back.max(), h.max()) << digits;
    for (const double q : {0.1, 0.5, 0.9, 1.0}) {
      EXPECT_EQ(back.value_at_quantile(q), h.value_at_quantile(q)) << digits << ' ' << q;
    }
  }
}

}  // namespace
