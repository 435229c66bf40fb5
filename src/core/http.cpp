// SPDX-License-Identifier: Apache-2.0
// HTTP status classification, Retry-After / HTTP-date parsing (RFC 9110) and the pushback
// headers (grpc-retry-pushback-ms, x-amz-retry-after). Hand-written: none of our dependencies
// parses HTTP dates (std::get_time depends on the locale).
#include "backoff/http.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

namespace backoff {

verdict classify_http_status(int status, std::optional<duration> retry_after) {
  if (status >= 100 && status < 400) return verdict::success();
  if (status == 429 || (status >= 500 && status < 600)) return verdict::retryable(retry_after);
  return verdict::permanent();
}

namespace {

namespace chr = std::chrono;
using sys_time = chr::system_clock::time_point;
using sys_secs = chr::sys_seconds;

bool digit(char c) {
  return c >= '0' && c <= '9';
}

// A field value without the spaces and tabs around it (RFC 9110 section 5.5: not part of it).
std::string_view trim_whitespace(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

// A pushback header's milliseconds: one or more digits, saturating at max_pushback_ms; nullopt
// for anything else (a sign, a fraction, an empty value).
std::optional<duration> pushback_milliseconds(std::string_view value) {
  value = trim_whitespace(value);
  if (value.empty()) return std::nullopt;
  std::int64_t ms = 0;
  for (const char c : value) {
    if (!digit(c)) return std::nullopt;
    ms = std::min(ms * 10 + (c - '0'), max_pushback_ms);  // ms <= 2^31: no overflow
  }
  return chr::duration_cast<duration>(chr::milliseconds{ms});
}

// Reads exactly n digits at s[i...].
bool number(std::string_view s, std::size_t& i, int n, int& out) {
  if (i + static_cast<std::size_t>(n) > s.size()) return false;
  out = 0;
  for (int k = 0; k < n; ++k, ++i) {
    if (!digit(s[i])) return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

bool literal(std::string_view s, std::size_t& i, std::string_view lit) {
  if (s.substr(i, lit.size()) != lit) return false;
  i += lit.size();
  return true;
}

constexpr std::array<std::string_view, 12> month_names = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::array<std::string_view, 7> day_names = {"Mon", "Tue", "Wed", "Thu",
                                                       "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 7> long_day_names = {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};

bool read_month(std::string_view s, std::size_t& i, int& out) {
  for (std::size_t m = 0; m < month_names.size(); ++m) {
    if (s.substr(i, 3) == month_names[m]) {
      out = static_cast<int>(m) + 1;
      i += 3;
      return true;
    }
  }
  return false;
}

template <std::size_t N>
bool one_of(std::string_view s, std::size_t& i, const std::array<std::string_view, N>& names) {
  for (std::string_view n : names) {
    if (s.substr(i, n.size()) == n) {
      i += n.size();
      return true;
    }
  }
  return false;
}

bool clock_time(std::string_view s, std::size_t& i, int& h, int& m, int& sec) {
  return number(s, i, 2, h) && literal(s, i, ":") && number(s, i, 2, m) && literal(s, i, ":") &&
         number(s, i, 2, sec) && h < 24 && m < 60 && sec <= 60;  // 60: a leap second
}

std::optional<sys_secs> make_time(int y, int mo, int d, int h, int m, int sec) {
  const chr::year_month_day date{chr::year{y}, chr::month{static_cast<unsigned>(mo)},
                                 chr::day{static_cast<unsigned>(d)}};
  if (!date.ok()) return std::nullopt;
  return chr::sys_days{date} + chr::hours{h} + chr::minutes{m} + chr::seconds{sec};
}

}  // namespace

std::optional<sys_secs> parse_http_date(std::string_view s) {
  int y = 0, mo = 0, d = 0, h = 0, m = 0, sec = 0;
  std::size_t i = 0;
  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
  if (one_of(s, i, day_names) && literal(s, i, ", ") && number(s, i, 2, d) && literal(s, i, " ") &&
      read_month(s, i, mo) && literal(s, i, " ") && number(s, i, 4, y) && literal(s, i, " ") &&
      clock_time(s, i, h, m, sec) && literal(s, i, " GMT") && i == s.size()) {
    return make_time(y, mo, d, h, m, sec);
  }
  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT (a two-digit year more than 50 years ahead is in
  // the past century; we read 00-69 as 20xx and 70-99 as 19xx, the common approximation)
  i = 0;
  if (one_of(s, i, long_day_names) && literal(s, i, ", ") && number(s, i, 2, d) &&
      literal(s, i, "-") && read_month(s, i, mo) && literal(s, i, "-") && number(s, i, 2, y) &&
      literal(s, i, " ") && clock_time(s, i, h, m, sec) && literal(s, i, " GMT") && i == s.size()) {
    return make_time(y < 70 ? 2000 + y : 1900 + y, mo, d, h, m, sec);
  }
  // asctime: Sun Nov  6 08:49:37 1994
  i = 0;
  if (one_of(s, i, day_names) && literal(s, i, " ") && read_month(s, i, mo) && literal(s, i, " ")) {
    if (i < s.size() && s[i] == ' ') {
      ++i;
      if (!number(s, i, 1, d)) return std::nullopt;
    } else if (!number(s, i, 2, d)) {
      return std::nullopt;
    }
    if (literal(s, i, " ") && clock_time(s, i, h, m, sec) && literal(s, i, " ") &&
        number(s, i, 4, y) && i == s.size()) {
      return make_time(y, mo, d, h, m, sec);
    }
  }
  return std::nullopt;
}

std::string format_http_date(sys_secs t) {
  constexpr chr::year_month_day first{chr::year{1}, chr::January, chr::day{1}};
  constexpr chr::year_month_day last{chr::year{9999}, chr::December, chr::day{31}};
  const sys_secs lowest{chr::sys_days{first}};
  const sys_secs highest = chr::sys_days{last} + chr::seconds{86'399};
  t = std::clamp(t, lowest, highest);
  const chr::sys_days day = chr::floor<chr::days>(t);
  const chr::year_month_day date{day};
  const chr::hh_mm_ss clock{t - day};
  // day_names starts on Monday; weekday's iso_encoding is 1 for Monday.
  const unsigned weekday = chr::weekday{day}.iso_encoding() - 1;
  std::string out;
  out.reserve(29);
  const auto two = [&out](unsigned n) {
    out += static_cast<char>('0' + n / 10);
    out += static_cast<char>('0' + n % 10);
  };
  out += day_names[weekday];
  out += ", ";
  two(static_cast<unsigned>(date.day()));
  out += ' ';
  out += month_names[static_cast<unsigned>(date.month()) - 1];
  out += ' ';
  const auto year = static_cast<unsigned>(static_cast<int>(date.year()));
  two(year / 100);
  two(year % 100);
  out += ' ';
  two(static_cast<unsigned>(clock.hours().count()));
  out += ':';
  two(static_cast<unsigned>(clock.minutes().count()));
  out += ':';
  two(static_cast<unsigned>(clock.seconds().count()));
  out += " GMT";
  return out;
}

std::optional<duration> parse_retry_after(std::string_view value, sys_time now) {
  value = trim_whitespace(value);
  if (value.empty()) return std::nullopt;
  if (digit(value.front())) {
    constexpr std::int64_t max_seconds = std::numeric_limits<std::int64_t>::max() / 1'000'000'000;
    std::int64_t secs = 0;
    for (char c : value) {
      if (!digit(c)) return std::nullopt;
      secs = secs > (max_seconds - 9) / 10 ? max_seconds : secs * 10 + (c - '0');  // saturate
    }
    return chr::duration_cast<duration>(chr::seconds{secs});
  }
  const auto when = parse_http_date(value);
  if (!when) return std::nullopt;
  // In seconds: a date past 2262 does not fit in nanoseconds since 1970, but its delay saturates.
  const auto now_s = chr::floor<chr::seconds>(now);
  if (*when <= now_s) return duration{0};
  const std::int64_t secs = (*when - now_s).count();
  constexpr std::int64_t max_seconds = std::numeric_limits<std::int64_t>::max() / 1'000'000'000;
  if (secs >= max_seconds) return chr::duration_cast<duration>(chr::seconds{max_seconds});
  const duration exact = chr::duration_cast<duration>(*when - now_s) - (now - now_s);
  return exact.count() > 0 ? exact : duration{0};
}

// The two headers share their grammar; only what a bad value means differs (classify_http_reply).
std::optional<duration> parse_grpc_retry_pushback(std::string_view value) {
  return pushback_milliseconds(value);
}

std::optional<duration> parse_amz_retry_after(std::string_view value) {
  return pushback_milliseconds(value);
}

verdict classify_http_reply(int status, const retry_headers& headers, sys_time now) {
  verdict v = classify_http_status(status);
  if (v.kind != verdict_kind::retryable) return v;
  const std::optional<duration> retry_after =
      headers.retry_after ? parse_retry_after(*headers.retry_after, now) : std::nullopt;
  v.not_sent = status == 429 || (status == 503 && retry_after.has_value());
  if (headers.grpc_retry_pushback_ms) {
    const std::optional<duration> wait = parse_grpc_retry_pushback(*headers.grpc_retry_pushback_ms);
    if (!wait) {
      v.kind = verdict_kind::permanent;  // gRFC A6: the server asks not to retry
      return v;
    }
    v.retry_after = wait;
    v.pushback = true;
    return v;
  }
  if (headers.amz_retry_after) {
    if (const std::optional<duration> hint = parse_amz_retry_after(*headers.amz_retry_after)) {
      v.retry_after = std::min(*hint, amz_retry_after_cap);
      return v;
    }
  }
  v.retry_after = retry_after;
  return v;
}

}  // namespace backoff
