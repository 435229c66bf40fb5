// SPDX-License-Identifier: Apache-2.0
#include "hdr_histogram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace backoff::report {
namespace {

// The counts `highest` needs: buckets until 2^bits << (buckets - 1) exceeds it
// (AbstractHistogram's getBucketsNeededToCoverValue), plus one half bucket.
std::size_t indices_for(std::int64_t highest, int bits) {
  std::int64_t smallest_untrackable = std::int64_t{1} << bits;
  std::size_t buckets = 1;
  while (smallest_untrackable <= highest) {
    if (smallest_untrackable > std::numeric_limits<std::int64_t>::max() / 2) {
      ++buckets;
      break;
    }
    smallest_untrackable <<= 1;
    ++buckets;
  }
  return (buckets + 1) * (std::size_t{1} << (bits - 1));
}

}  // namespace

void hdr_precision::throw_bad(const char* what) {
  throw std::invalid_argument(std::string("histogram: ") + what);
}

hdr_histogram::hdr_histogram(std::int64_t highest, hdr_precision precision)
    : precision_(precision),
      highest_(std::max<std::int64_t>(highest, 2)),
      index_limit_(indices_for(highest_, precision.bits())) {}

hdr_histogram hdr_histogram::from_counts(std::int64_t highest, hdr_precision precision,
                                         std::vector<std::uint64_t> counts) {
  hdr_histogram h(highest, precision);
  while (!counts.empty() && counts.back() == 0) counts.pop_back();
  if (counts.size() > h.index_limit_) {
    throw std::invalid_argument("histogram: counts beyond the range");
  }
  h.counts_ = std::move(counts);
  for (const std::uint64_t c : h.counts_) h.total_ += c;
  if (h.total_ > 0) {
    h.max_index_ = h.counts_.size() - 1;
    h.max_value_ = h.highest_equivalent(h.max_index_);
  }
  return h;
}

void hdr_histogram::add(const hdr_histogram& other) {
  if (other.precision_ != precision_) {
    throw std::invalid_argument("histogram: cannot add one of another precision");
  }
  if (other.total_ == 0) return;
  if (other.max_index_ >= index_limit_) {
    throw std::invalid_argument("histogram: cannot add one whose values exceed this one's range");
  }
  if (other.max_index_ >= counts_.size()) counts_.resize(other.max_index_ + 1, 0);
  for (std::size_t i = 0; i <= other.max_index_; ++i) counts_[i] += other.counts_[i];
  if (total_ == 0 || other.max_index_ > max_index_) max_index_ = other.max_index_;
  max_value_ = std::max(max_value_, other.max_value_);
  total_ += other.total_;
}

void hdr_histogram::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
  max_index_ = 0;
  max_value_ = 0;
}

std::int64_t hdr_histogram::lowest_equivalent(std::size_t index) const noexcept {
  const int half_magnitude = precision_.bits() - 1;
  const std::int64_t half = std::int64_t{1} << half_magnitude;
  auto bucket = static_cast<std::int64_t>(index >> half_magnitude) - 1;
  auto sub_bucket = static_cast<std::int64_t>(index & static_cast<std::size_t>(half - 1)) + half;
  if (bucket < 0) {
    sub_bucket -= half;
    bucket = 0;
  }
  return sub_bucket << bucket;
}

std::int64_t hdr_histogram::highest_equivalent(std::size_t index) const noexcept {
  const auto bucket =
      std::max<std::int64_t>(0, static_cast<std::int64_t>(index >> (precision_.bits() - 1)) - 1);
  return lowest_equivalent(index) + (std::int64_t{1} << bucket) - 1;
}

std::int64_t hdr_histogram::max() const noexcept {
  return total_ == 0 ? 0 : highest_equivalent(max_index_);
}

std::int64_t hdr_histogram::value_at_quantile(double q) const {
  return quantiles({q}, quantile_rule::highest_equivalent).front();
}

std::vector<std::int64_t> hdr_histogram::quantiles(const std::vector<double>& qs,
                                                   quantile_rule rule) const {
  std::vector<std::int64_t> out(qs.size(), 0);
  if (total_ == 0) return out;
  const double n = static_cast<double>(total_);
  const auto rank_of = [&](double q) -> std::uint64_t {
    if (rule == quantile_rule::bucket_middle) {
      return static_cast<std::uint64_t>(std::max(1.0, std::ceil(q * n)));
    }
    // The nudge keeps 0.99 x 100 at rank 99 despite rounding in the product.
    const double exact = std::clamp(q, 0.0, 1.0) * n;
    return std::max<std::uint64_t>(static_cast<std::uint64_t>(std::ceil(exact - exact * 1e-12)), 1);
  };
  const auto value_of = [&](std::size_t index, double q) -> std::int64_t {
    if (rule == quantile_rule::bucket_middle) {
      const std::int64_t low = lowest_equivalent(index);
      const std::int64_t width = highest_equivalent(index) - low + 1;
      return std::min(low + (width >> 1), max_value_);
    }
    return q <= 0 ? lowest_equivalent(index) : highest_equivalent(index);
  };
  std::size_t next = 0;
  std::uint64_t seen = 0;
  for (std::size_t index = 0; index < counts_.size() && next < qs.size(); ++index) {
    seen += counts_[index];
    while (next < qs.size() && seen >= rank_of(qs[next])) {
      out[next] = value_of(index, qs[next]);
      ++next;
    }
  }
  for (; next < qs.size(); ++next) {
    out[next] = rule == quantile_rule::bucket_middle ? max_value_ : max();
  }
  return out;
}

}  // namespace backoff::report
