// SPDX-License-Identifier: Apache-2.0
#include "output.hpp"

#include <fmt/format.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <random>

namespace backoff::cli {

duration parse_flag_duration(std::string_view text) {
  // Digits with at most one decimal point: seconds, read by the library's own grammar so that
  // "0.000000001" is exactly 1 ns.
  const bool bare_seconds =
      !text.empty() && text.find_first_not_of("0123456789.") == std::string_view::npos &&
      std::count(text.begin(), text.end(), '.') <= 1 && text.front() != '.' && text.back() != '.';
  if (bare_seconds) return parse_duration(std::string(text) + "s");
  return parse_duration(text);
}

std::uint64_t fresh_seed() {
  std::uint64_t seed = 0;
  if (::getrandom(&seed, sizeof seed, 0) == static_cast<ssize_t>(sizeof seed)) return seed;
  std::random_device device;  // no getrandom (a kernel before 3.17, a seccomp filter)
  return (std::uint64_t{device()} << 32) ^ device();
}

bool flush_stdout(std::string_view who, std::string_view note) {
  static bool reported = false;  // one line, however many callers find the stream failed
  // A stream already failed kept the errno of its failed write, if nothing changed it since;
  // only errors a write gives are trusted as its reason.
  int error = errno;
  if (std::cout) {
    errno = 0;
    std::cout.flush();
    if (std::cout) return true;
    error = errno;
  }
  if (reported) return false;
  reported = true;
  const bool write_errno = error == ENOSPC || error == EIO || error == EPIPE || error == EBADF ||
                           error == EFBIG || error == EDQUOT || error == EROFS || error == EINVAL;
  std::cerr << who << ": cannot write to standard output: "
            << (write_errno ? std::strerror(error) : "write error") << (note.empty() ? "" : " ")
            << note << '\n';
  return false;
}

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

std::string read_at_most(std::istream& in, std::size_t limit, bool& too_large) {
  std::string text;
  too_large = false;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > limit) {
      too_large = true;
      break;
    }
  }
  return text;
}

}  // namespace backoff::cli
