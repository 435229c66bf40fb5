// SPDX-License-Identifier: Apache-2.0
// Prometheus' text exposition format (version 0.0.4,
// https://prometheus.io/docs/instrumenting/exposition_formats/): the one writer of "# HELP",
// "# TYPE" and sample lines, so that every /metrics body (the library's retry_metrics, the test
// server's, the proxy's) escapes, names and formats numbers the same way.
//
//   backoff::prometheus_writer out;
//   out.counter("app_requests_total", "Requests answered.", std::uint64_t{42});
//   out.family("app_answers_total", backoff::prometheus_type::counter, "Answers, by status.");
//   out.sample("app_answers_total", {{"status", "200"}, {"path", "/api"}}, std::uint64_t{40});
//   const double bounds[] = {0.1, 1.0};
//   const std::uint64_t counts[] = {3, 5, 1};  // <= 0.1, <= 1, above 1
//   out.histogram("app_latency_seconds", "Time to answer.", bounds, counts, 2.5);
//   const std::string body = out.take();
//
// Integers are written in decimal, doubles in the shortest form that reads back exactly, and
// non-finite doubles as +Inf, -Inf and NaN. A count passed as a plain `int` literal is
// ambiguous between the two overloads: write std::uint64_t{n} or a double.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "backoff/export.hpp"

namespace backoff {

enum class prometheus_type { counter, gauge, histogram };

struct prometheus_label {
  std::string_view name;
  std::string_view value;
};

// True for [a-zA-Z_:][a-zA-Z0-9_:]*.
BACKOFF_EXPORT bool is_prometheus_metric_name(std::string_view name) noexcept;

// Backslash, double quote and line feed escaped, as the text format requires in label values.
BACKOFF_EXPORT std::string escape_prometheus_label_value(std::string_view value);

class BACKOFF_EXPORT prometheus_writer {
 public:
  // "# HELP name help\n# TYPE name type\n", the help's backslashes and line feeds escaped.
  // Throws std::invalid_argument when `name` is not a metric name.
  void family(std::string_view name, prometheus_type type, std::string_view help);

  // "name{l1="v1",l2="v2"} value\n" (no braces without labels; values escaped). Throws
  // std::invalid_argument when `name` is not a metric name or a label name is not one
  // ([a-zA-Z_][a-zA-Z0-9_]*): a bad name would make the whole body unreadable to a scraper.
  void sample(std::string_view name, std::initializer_list<prometheus_label> labels,
              std::uint64_t value);
  void sample(std::string_view name, std::initializer_list<prometheus_label> labels, double value);

  // A family and its one unlabelled sample.
  void counter(std::string_view name, std::string_view help, std::uint64_t value);
  void counter(std::string_view name, std::string_view help, double value);
  void gauge(std::string_view name, std::string_view help, double value);

  // A histogram family: name_bucket{le="b"} with the cumulative count for each upper bound,
  // le="+Inf" with every count, then name_sum and name_count. counts_per_bucket has
  // upper_bounds.size() + 1 entries, the last for values above every bound; the bounds are
  // strictly increasing. Throws std::invalid_argument otherwise.
  void histogram(std::string_view name, std::string_view help, std::span<const double> upper_bounds,
                 std::span<const std::uint64_t> counts_per_bucket, double sum);

  const std::string& text() const noexcept { return text_; }
  // The text so far; the writer starts empty again.
  std::string take() noexcept;

 private:
  void sample_start(std::string_view name, std::initializer_list<prometheus_label> labels);

  std::string text_;
};

}  // namespace backoff
