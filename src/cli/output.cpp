#include "output.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace backoff::cli {

std::string human_duration(duration d) {
  const std::int64_t v = d.count();
  if (v <= 0) return format_duration(d);
  // Keep four significant digits: round to the power of ten that leaves them.
  const int digits = static_cast<int>(std::floor(std::log10(static_cast<double>(v)))) + 1;
  if (digits <= 4) return format_duration(d);
  const auto step = static_cast<std::int64_t>(std::pow(10.0, digits - 4));
  const std::int64_t rounded = (v + step / 2) / step * step;
  return format_duration(duration{rounded});
}

std::string seconds_text(duration d) {
  return fmt::format("{}", to_seconds(d));
}

}  // namespace backoff::cli
