// SPDX-License-Identifier: Apache-2.0
// Prometheus' text exposition format, version 0.0.4: names checked, values escaped, numbers
// written so that a scraper reads back exactly what was counted.
#include "backoff/prometheus_text.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace backoff {

namespace {

bool is_ascii_letter(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_ascii_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

// Metric names may contain colons (reserved for recording rules); label names may not.
bool is_prometheus_name(std::string_view name, bool colons_allowed) noexcept {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool allowed = is_ascii_letter(c) || c == '_' || (colons_allowed && c == ':') ||
                         (i > 0 && is_ascii_digit(c));
    if (!allowed) return false;
  }
  return true;
}

void require_metric_name(std::string_view name) {
  if (!is_prometheus_metric_name(name)) {
    throw std::invalid_argument("'" + std::string(name) +
                                "' is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
  }
}

void require_label_name(std::string_view name) {
  if (!is_prometheus_name(name, false)) {
    throw std::invalid_argument("'" + std::string(name) +
                                "' is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)");
  }
}

std::string_view prometheus_type_name(prometheus_type type) noexcept {
  switch (type) {
    case prometheus_type::counter:
      return "counter";
    case prometheus_type::gauge:
      return "gauge";
    case prometheus_type::histogram:
      return "histogram";
  }
  return "untyped";
}

// Label values escape backslash, double quote and line feed; HELP text the first and last only.
std::string escape_prometheus_text(std::string_view text, bool escape_quotes) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && escape_quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

void append_prometheus_number(std::string& out, std::uint64_t value) {
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, ec == std::errc{} ? end : buffer);
}

void append_prometheus_number(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    char buffer[32];  // the longest shortest form of a double is 24 characters
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, ec == std::errc{} ? end : buffer);
  }
}

std::string prometheus_number_text(double value) {
  std::string out;
  append_prometheus_number(out, value);
  return out;
}

void require_histogram_shape(std::span<const double> upper_bounds,
                             std::span<const std::uint64_t> counts_per_bucket) {
  if (counts_per_bucket.size() != upper_bounds.size() + 1) {
    throw std::invalid_argument("prometheus histogram: " + std::to_string(upper_bounds.size()) +
                                " upper bounds need " + std::to_string(upper_bounds.size() + 1) +
                                " bucket counts, not " + std::to_string(counts_per_bucket.size()));
  }
  for (std::size_t i = 1; i < upper_bounds.size(); ++i) {
    if (!(upper_bounds[i - 1] < upper_bounds[i])) {
      throw std::invalid_argument("prometheus histogram: upper bounds must increase");
    }
  }
}

}  // namespace

bool is_prometheus_metric_name(std::string_view name) noexcept {
  return is_prometheus_name(name, true);
}

std::string escape_prometheus_label_value(std::string_view value) {
  return escape_prometheus_text(value, true);
}

void prometheus_writer::family(std::string_view name, prometheus_type type, std::string_view help) {
  require_metric_name(name);
  text_.append("# HELP ").append(name).append(" ").append(escape_prometheus_text(help, false));
  text_.append("\n# TYPE ").append(name).append(" ").append(prometheus_type_name(type));
  text_.append("\n");
}

void prometheus_writer::sample_start(std::string_view name,
                                     std::initializer_list<prometheus_label> labels) {
  require_metric_name(name);
  for (const prometheus_label& label : labels) require_label_name(label.name);
  text_.append(name);
  if (labels.size() != 0) {
    char separator = '{';
    for (const prometheus_label& label : labels) {
      text_ += separator;
      text_.append(label.name).append("=\"").append(escape_prometheus_label_value(label.value));
      text_ += '"';
      separator = ',';
    }
    text_ += '}';
  }
  text_ += ' ';
}

void prometheus_writer::sample(std::string_view name,
                               std::initializer_list<prometheus_label> labels,
                               std::uint64_t value) {
  sample_start(name, labels);
  append_prometheus_number(text_, value);
  text_ += '\n';
}

void prometheus_writer::sample(std::string_view name,
                               std::initializer_list<prometheus_label> labels, double value) {
  sample_start(name, labels);
  append_prometheus_number(text_, value);
  text_ += '\n';
}

void prometheus_writer::counter(std::string_view name, std::string_view help, std::uint64_t value) {
  family(name, prometheus_type::counter, help);
  sample(name, {}, value);
}

void prometheus_writer::counter(std::string_view name, std::string_view help, double value) {
  family(name, prometheus_type::counter, help);
  sample(name, {}, value);
}

void prometheus_writer::gauge(std::string_view name, std::string_view help, double value) {
  family(name, prometheus_type::gauge, help);
  sample(name, {}, value);
}

void prometheus_writer::histogram(std::string_view name, std::string_view help,
                                  std::span<const double> upper_bounds,
                                  std::span<const std::uint64_t> counts_per_bucket, double sum) {
  require_histogram_shape(upper_bounds, counts_per_bucket);
  family(name, prometheus_type::histogram, help);
  const std::string bucket = std::string(name) + "_bucket";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < upper_bounds.size(); ++i) {
    cumulative += counts_per_bucket[i];
    sample(bucket, {{"le", prometheus_number_text(upper_bounds[i])}}, cumulative);
  }
  cumulative += counts_per_bucket.back();
  sample(bucket, {{"le", "+Inf"}}, cumulative);
  sample(std::string(name) + "_sum", {}, sum);
  sample(std::string(name) + "_count", {}, cumulative);
}

std::string prometheus_writer::take() noexcept {
  std::string out = std::move(text_);
  text_.clear();
  return out;
}

}  // namespace backoff
