// SPDX-License-Identifier: Apache-2.0
// The one latency histogram of the report layer: HdrHistogram's bucket layout, with its precision
// a parameter, in memory that grows with the largest value rather than with the number of
// samples. The simulator's recorder keeps 12 sub-bucket bits in model units; `backoff load` keeps
// 3 significant digits in microseconds, the precision its interval log (hdr_log.hpp, which holds
// the V2 encoding) writes, and its summary reads the same counts.
//
//   hdr_histogram interval(3'600'000'000, hdr_precision::significant_digits(3));  // us, 1 h
//   interval.record(1234);
//   run.add(interval);   interval.reset();          // one interval into the run's histogram
//   std::int64_t p99 = run.value_at_quantile(0.99); // HdrHistogram's getValueAtPercentile
//
// The layout (AbstractHistogram's, unit 1): with s sub-bucket bits, values below 2^s are exact;
// above, value v keeps its top s bits: index ((b + 1) << (s - 1)) + (v >> b) - 2^(s - 1), with
// b = bit_width(v) - s, so every value is kept within 2^-(s - 1) of itself.
// No zlib and no I/O here: what links only the report layer (the static backoff-try) needs none.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

namespace backoff::report {

// How finely an hdr_histogram keeps values: its sub-bucket bits.
class hdr_precision {
 public:
  // HdrHistogram's: d digits keep 2 x 10^d values exact, so 2^ceil(log2(2 x 10^d)) sub-buckets
  // (3 digits: 11 bits, every value within 0.1 %). d in [0, 5]; throws std::invalid_argument.
  static constexpr hdr_precision significant_digits(int digits) {
    if (digits < 0 || digits > 5) throw_bad("significant digits must be 0 to 5");
    return hdr_precision(bits_for_digits(digits));
  }
  // s bits, s in [1, 20]: values below 2^s exact, the others within 2^-(s - 1) (12 bits: 0.05 %,
  // a bucket's middle within 0.025 %). Throws std::invalid_argument.
  static constexpr hdr_precision sub_bucket_bits(int bits) {
    if (bits < 1 || bits > 20) throw_bad("sub-bucket bits must be 1 to 20");
    return hdr_precision(bits);
  }

  constexpr int bits() const noexcept { return bits_; }
  // The significant digits whose sub-bucket bits these are, if any (HdrHistogram's encoding
  // carries digits, so only such a precision can be written to a log).
  constexpr std::optional<int> digits() const noexcept {
    for (int d = 0; d <= 5; ++d) {
      if (bits_for_digits(d) == bits_) return d;
    }
    return std::nullopt;
  }

  friend constexpr bool operator==(hdr_precision, hdr_precision) = default;

 private:
  constexpr explicit hdr_precision(int bits) : bits_(bits) {}
  static constexpr int bits_for_digits(int digits) {
    std::uint64_t largest_exact = 2;
    for (int i = 0; i < digits; ++i) largest_exact *= 10;
    return static_cast<int>(std::bit_width(largest_exact - 1));
  }
  [[noreturn]] static void throw_bad(const char* what);
  int bits_;
};

// How a percentile is read from the counts.
enum class quantile_rule : std::uint8_t {
  // HdrHistogram's getValueAtPercentile: rank ceil(q n) (nudged so that 0.99 x 100 stays 99),
  // the highest value of that rank's bucket (its lowest for q = 0).
  highest_equivalent,
  // The simulator's: rank max(1, ceil(q n)), the middle of that rank's bucket, but never more
  // than the largest value recorded.
  bucket_middle,
};

class hdr_histogram {
 public:
  // Values from 0 to `highest`: one above it is recorded as `highest`, one below 0 as 0. The
  // defaults are HdrHistogram's usual: 3 digits, up to one hour in microseconds.
  explicit hdr_histogram(std::int64_t highest = 3'600'000'000,
                         hdr_precision precision = hdr_precision::significant_digits(3));
  // A histogram with these counts by index (a decoder's); throws std::invalid_argument when
  // there are more than `highest` needs.
  static hdr_histogram from_counts(std::int64_t highest, hdr_precision precision,
                                   std::vector<std::uint64_t> counts);

  void record(std::int64_t value, std::uint64_t times = 1) {
    if (times == 0) return;
    const std::int64_t v = value < 0 ? 0 : value > highest_ ? highest_ : value;
    const std::size_t index = index_of(v);
    if (index >= counts_.size()) counts_.resize(index + 1, 0);
    counts_[index] += times;
    if (total_ == 0 || index > max_index_) max_index_ = index;
    if (v > max_value_) max_value_ = v;
    total_ += times;
  }
  // Adds `other`'s counts; throws std::invalid_argument if its precision differs or its values
  // exceed this one's range.
  void add(const hdr_histogram& other);
  void reset();

  std::uint64_t count() const noexcept { return total_; }
  // The highest value equivalent to the largest recorded (HdrHistogram's getMaxValue); 0 empty.
  std::int64_t max() const noexcept;
  // The largest value recorded, exactly (after decoding or adding a decoded one: max()).
  std::int64_t max_recorded() const noexcept { return max_value_; }
  std::int64_t highest_trackable() const noexcept { return highest_; }
  hdr_precision precision() const noexcept { return precision_; }

  // HdrHistogram's getValueAtPercentile, q in [0, 1]; 0 when empty.
  std::int64_t value_at_quantile(double q) const;
  // Several percentiles in one pass, qs ascending; 0 each when empty.
  std::vector<std::int64_t> quantiles(const std::vector<double>& qs, quantile_rule rule) const;

  // The counts by index, for encoders and decoders: indices [0, indices_used()) hold counts, and
  // none can be at or beyond index_limit() (what `highest` needs).
  std::size_t indices_used() const noexcept { return total_ == 0 ? 0 : max_index_ + 1; }
  std::size_t index_limit() const noexcept { return index_limit_; }
  std::uint64_t count_at_index(std::size_t index) const noexcept {
    return index < counts_.size() ? counts_[index] : 0;
  }
  std::int64_t lowest_equivalent(std::size_t index) const noexcept;
  std::int64_t highest_equivalent(std::size_t index) const noexcept;

 private:
  std::size_t index_of(std::int64_t value) const noexcept {
    const auto v = static_cast<std::uint64_t>(value);
    const int bits = precision_.bits();
    const int bucket =
        static_cast<int>(std::bit_width(v | ((std::uint64_t{1} << bits) - 1))) - bits;
    return (static_cast<std::size_t>(bucket + 1) << (bits - 1)) +
           static_cast<std::size_t>(v >> bucket) - (std::size_t{1} << (bits - 1));
  }

  hdr_precision precision_;
  std::int64_t highest_;
  std::size_t index_limit_;            // the counts `highest` needs
  std::vector<std::uint64_t> counts_;  // grown to the largest index recorded
  std::uint64_t total_ = 0;
  std::size_t max_index_ = 0;  // of the largest value recorded (valid when total_ > 0)
  std::int64_t max_value_ = 0;
};

}  // namespace backoff::report
