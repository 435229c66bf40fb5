// SPDX-License-Identifier: Apache-2.0
#include "faults.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <span>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "config/toml_shape.hpp"

namespace backoff::faults {
namespace {

constexpr std::string_view fault_what = "fault";

// A slow body is at most 1 GiB: it is padding the server makes up, sent slowly on purpose.
constexpr std::uint64_t largest_body = std::uint64_t{1} << 30;

[[noreturn]] void fail(std::string_view spec, const std::string& why) {
  throw parse_error("bad " + std::string(fault_what) + " " + quote_for_message(spec) + ": " + why);
}

std::string quoted_key(std::string_view key) {
  return "'" + std::string(key) + "'";
}

int parse_status(std::string_view spec, std::string_view key, std::string_view text) {
  int status = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), status);
  if (ec != std::errc{} || end != text.data() + text.size() || status < 200 || status > 599) {
    fail(spec, quoted_key(key) + " must be an HTTP status from 200 to 599, got " +
                   quote_for_message(text));
  }
  return status;
}

// "4KiB/s" (a byte size per second).
std::optional<double> parse_speed(std::string_view text) {
  if (!text.ends_with("/s")) return std::nullopt;
  try {
    const std::uint64_t size = parse_byte_size(text.substr(0, text.size() - 2));
    if (size == 0) return std::nullopt;
    return static_cast<double>(size);
  } catch (const parse_error&) {
    return std::nullopt;
  }
}

// A header name as HTTP allows it (RFC 9110 token), kept in lower case.
std::string header_name(std::string_view spec, std::string_view text,
                        std::string_view key = "header") {
  std::string out;
  for (const char c : text) {
    const bool token = std::isalnum(static_cast<unsigned char>(c)) ||
                       std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!token) {
      fail(spec, quoted_key(key) + " must be a header name, got " + quote_for_message(text));
    }
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (out.empty()) fail(spec, quoted_key(key) + " is empty");
  return out;
}

// Bit i: fault_kind i; then bit 5 + i: latency_distribution i.
constexpr std::string_view kind_names[] = {"errors",    "latency",  "partial",   "outage",
                                           "slow_body", "capacity", "cold_start"};
constexpr std::string_view distribution_names[] = {"fixed", "uniform", "exponential", "lognormal",
                                                   "pareto"};

std::string_view kind_name(fault_kind kind) {
  return kind_names[static_cast<std::size_t>(kind)];
}

std::string_view distribution_name(latency_distribution d) {
  return distribution_names[static_cast<std::size_t>(d)];
}

std::string format_real(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::string("0");
}

std::string format_bytes(std::uint64_t n) {
  if (n != 0 && n % (1024 * 1024) == 0) return std::to_string(n / (1024 * 1024)) + "MiB";
  if (n != 0 && n % 1024 == 0) return std::to_string(n / 1024) + "KiB";
  return std::to_string(n) + "B";
}

constexpr variant_set every_kind = variant_bit(std::size(kind_names)) - 1;
constexpr variant_set every_distribution =
    (variant_bit(std::size(kind_names) + std::size(distribution_names)) - 1) & ~every_kind;
constexpr variant_set fault_groups[] = {every_kind, every_distribution};

constexpr variant_set kinds(std::initializer_list<fault_kind> list) {
  variant_set out = every_distribution;
  for (const fault_kind k : list) out |= variant_bit(k);
  return out;
}
constexpr variant_set distribution_bit(latency_distribution d) {
  return variant_bit(static_cast<unsigned>(d) + std::size(kind_names));
}
constexpr variant_set latency_with(latency_distribution d) {
  return variant_bit(fault_kind::latency) | distribution_bit(d);
}

// The variants a parsed fault is: its kind, and for a latency its distribution.
variant_set in_effect(const fault& f) {
  const variant_set kind = variant_bit(f.kind);
  return f.kind == fault_kind::latency ? kind | distribution_bit(f.distribution) : kind;
}

void read_a(fault& f, const spec_value& v) {
  f.a = v.time();
}
std::optional<std::string> write_a(const fault& f) {
  return format_duration(f.a);
}

// In canonical order: the kind's own keys, then rate.
constexpr spec_key<fault> fault_keys[] = {
    {"distribution", kinds({fault_kind::latency}),
     "`fixed`, `uniform`, `exponential`, `lognormal` or `pareto`", "`fixed`",
     "how the added latency is drawn",
     [](fault& f, const spec_value& v) {
       for (std::size_t i = 0; i < std::size(distribution_names); ++i) {
         if (v.text() == distribution_names[i]) {
           f.distribution = static_cast<latency_distribution>(i);
           return;
         }
       }
       fail(v.spec,
            "'distribution' must be fixed, uniform, exponential, lognormal or pareto, got " +
                quote_for_message(v.text()) +
                name_hint(v.text(), std::span<const std::string_view>(distribution_names)));
     },
     [](const fault& f) -> std::optional<std::string> {
       return std::string(distribution_name(f.distribution));
     }},
    {"delay", latency_with(latency_distribution::fixed), "a duration up to 24h", "required",
     "the latency added", read_a, write_a},
    {"lo", latency_with(latency_distribution::uniform), "a duration up to 24h", "required",
     "the shortest latency", read_a, write_a},
    {"hi", latency_with(latency_distribution::uniform), "a duration up to 24h, at least `lo`",
     "required", "the longest latency (not reached)",
     [](fault& f, const spec_value& v) { f.b = v.time(); },
     [](const fault& f) -> std::optional<std::string> { return format_duration(f.b); }},
    {"mean", latency_with(latency_distribution::exponential), "a duration up to 24h", "required",
     "the mean latency", read_a, write_a},
    {"median", latency_with(latency_distribution::lognormal), "a duration up to 24h", "required",
     "the median latency", read_a, write_a},
    {"sigma", latency_with(latency_distribution::lognormal), "a number from 0 to 10", "required",
     "the standard deviation of the latency's logarithm",
     [](fault& f, const spec_value& v) { f.sigma = v.number(); },
     [](const fault& f) -> std::optional<std::string> { return format_real(f.sigma); }},
    {"scale", latency_with(latency_distribution::pareto), "a duration up to 24h", "required",
     "the shortest latency", read_a, write_a},
    {"shape", latency_with(latency_distribution::pareto), "a number above 0, at most 100",
     "required", "the tail: the mean is scale * shape / (shape - 1) for shape > 1",
     [](fault& f, const spec_value& v) { f.shape = v.number(); },
     [](const fault& f) -> std::optional<std::string> { return format_real(f.shape); }},
    {"header", kinds({fault_kind::partial}), "a header name", "none; `header` or `path`",
     "the requests whose header has one of `value` fail",
     [](fault& f, const spec_value& v) { f.header = header_name(v.spec, v.text()); },
     [](const fault& f) -> std::optional<std::string> {
       if (f.header.empty()) return std::nullopt;
       return f.header;
     }},
    {"value", kinds({fault_kind::partial}), "a value, or a list `[3, 7]`", "required with `header`",
     "the header values that fail",
     [](fault& f, const spec_value& v) {
       f.values = v.arg.is_list ? v.arg.items : std::vector<std::string>{v.text()};
     },
     [](const fault& f) -> std::optional<std::string> {
       if (f.header.empty()) return std::nullopt;
       std::string values;
       for (const auto& x : f.values) values += (values.empty() ? "" : ", ") + x;
       return "[" + values + "]";
     }},
    {"path", kinds({fault_kind::partial}), "a path prefix starting with `/`",
     "none; `header` or `path`", "the requests whose path starts so fail",
     [](fault& f, const spec_value& v) {
       if (!v.text().starts_with('/')) {
         fail(v.spec, "'path' must start with '/', got " + quote_for_message(v.text()));
       }
       f.path_prefix = v.text();
     },
     [](const fault& f) -> std::optional<std::string> {
       if (!f.header.empty()) return std::nullopt;
       return f.path_prefix;
     }},
    {"status", kinds({fault_kind::errors, fault_kind::partial, fault_kind::outage}),
     "an HTTP status, 200 to 599", "503", "the answer of a request that fails",
     [](fault& f, const spec_value& v) { f.status = parse_status(v.spec, v.arg.key, v.text()); },
     [](const fault& f) -> std::optional<std::string> {
       if (f.kind == fault_kind::outage && f.action != outage_action::status) return std::nullopt;
       return std::to_string(f.status);
     }},
    {"fade", kinds({fault_kind::errors}), "a duration above 0 up to 24h", "none",
     "transient errors: a retry fails with rate * (1 - t / fade), t being the caller's time since "
     "its first attempt (header `x-backoff-since-first-attempt`, ms); gone at `fade`",
     [](fault& f, const spec_value& v) {
       f.fade = v.time();
       if (f.fade <= duration{0} || f.fade > longest_injected_wait) {
         fail(v.spec,
              "'fade' must be above 0s and at most 24h, got " + quote_for_message(v.text()));
       }
     },
     [](const fault& f) -> std::optional<std::string> {
       if (f.fade <= duration{0}) return std::nullopt;
       return format_duration(f.fade);
     }},
    {"action", kinds({fault_kind::outage}), "`status`, `reset`, `hang` or `pause`", "`status`",
     "answer `status`, reset the connection (RST), hold the request until the window ends, or "
     "pause the whole server (SIGSTOP): work under way and new requests wait until it ends",
     [](fault& f, const spec_value& v) {
       if (v.text() == "status") {
         f.action = outage_action::status;
       } else if (v.text() == "reset") {
         f.action = outage_action::reset;
       } else if (v.text() == "hang") {
         f.action = outage_action::hang;
       } else if (v.text() == "pause") {
         f.action = outage_action::pause;
       } else {
         fail(v.spec,
              "'action' must be status, reset, hang or pause, got " + quote_for_message(v.text()));
       }
     },
     [](const fault& f) -> std::optional<std::string> {
       switch (f.action) {
         case outage_action::reset:
           return "reset";
         case outage_action::hang:
           return "hang";
         case outage_action::pause:
           return "pause";
         case outage_action::status:
           break;
       }
       return std::nullopt;
     }},
    {"keys", kinds({fault_kind::outage}), "a percentage (`50%`) or a fraction (`0.5`)", "100%",
     "the share of keys that are down: a request fails when its key (`key_header`'s value, a "
     "number mod 1000, other text hashed to 0..999) is below keys * 1000; one without it is spared",
     [](fault& f, const spec_value& v) { f.keys = v.fraction(); },
     [](const fault& f) -> std::optional<std::string> {
       if (f.keys >= 1.0) return std::nullopt;
       return format_fraction(f.keys);
     }},
    {"key_header", kinds({fault_kind::outage}), "a header name", "`x-backoff-key`",
     "the header holding a request's key (with `keys`)",
     [](fault& f, const spec_value& v) {
       f.key_header = header_name(v.spec, v.text(), "key_header");
     },
     [](const fault& f) -> std::optional<std::string> {
       if (f.keys >= 1.0 || f.key_header == "x-backoff-key") return std::nullopt;
       return f.key_header;
     }},
    {"size", kinds({fault_kind::slow_body}), "a size from 1B to 1GiB (`16KiB`)", "required",
     "the body's size, padded",
     [](fault& f, const spec_value& v) {
       std::uint64_t n = 0;
       try {
         n = parse_byte_size(v.text());
       } catch (const parse_error&) {
       }
       if (n == 0 || n > largest_body) {
         fail(v.spec, "'size' must be a size from 1B to 1GiB (16384, 16KiB, 1MiB), got " +
                          quote_for_message(v.text()));
       }
       f.body_size = n;
     },
     [](const fault& f) -> std::optional<std::string> { return format_bytes(f.body_size); }},
    {"speed", kinds({fault_kind::slow_body}), "a size per second above 0 (`4KiB/s`)", "required",
     "how fast the body is sent",
     [](fault& f, const spec_value& v) {
       const auto speed = parse_speed(v.text());
       if (!speed) {
         fail(v.spec, "'speed' must be a size per second above 0 (4KiB/s, 512B/s), got " +
                          quote_for_message(v.text()));
       }
       f.bytes_per_s = *speed;
     },
     [](const fault& f) -> std::optional<std::string> {
       return format_real(f.bytes_per_s) + "B/s";
     }},
    {"share", kinds({fault_kind::capacity}), "a percentage above 0 (`50%`) or a fraction",
     "required", "the share of the service's workers left while the window lasts",
     [](fault& f, const spec_value& v) {
       f.share = v.fraction();
       if (!(f.share > 0)) fail(v.spec, "'share' must be above 0% (an outage takes it all)");
     },
     [](const fault& f) -> std::optional<std::string> { return format_fraction(f.share); }},
    {"factor", kinds({fault_kind::cold_start}), "a number from 1 to 1000", "required",
     "how many times slower the service is at the window's start",
     [](fault& f, const spec_value& v) {
       f.factor = v.number();
       if (!(f.factor >= 1 && f.factor <= 1000)) {
         fail(v.spec, "'factor' must be from 1 to 1000, got " + quote_for_message(v.text()));
       }
     },
     [](const fault& f) -> std::optional<std::string> { return format_real(f.factor); }},
    {"half_life", kinds({fault_kind::cold_start}), "a duration above 0, at most 24h", "required",
     "the time the slowdown takes to halve: 1 + (factor - 1) * 2^(-t / half_life)",
     [](fault& f, const spec_value& v) {
       f.half_life = v.time();
       if (f.half_life <= duration{0} || f.half_life > longest_injected_wait) {
         fail(v.spec,
              "'half_life' must be above 0s and at most 24h, got " + quote_for_message(v.text()));
       }
     },
     [](const fault& f) -> std::optional<std::string> { return format_duration(f.half_life); }},
    {"rate", all_variants, "a percentage (`5%`) or a fraction (`0.05`)", "100%",
     "the share of the requests it applies to that it hits",
     [](fault& f, const spec_value& v) { f.rate = v.fraction(); },
     [](const fault& f) -> std::optional<std::string> { return format_fraction(f.rate); }},
};

// The canonical text of a parsed fault: every key that matters, in the table's order.
std::string canonical(const fault& f) {
  return write_spec(kind_name(f.kind), fault_keys, f, in_effect(f));
}

std::string read_limited(const std::string& path) {
  const auto fail_read = [&](const std::string& why) -> std::string {
    throw fault_schedule_error("cannot read the fault schedule " + quote_for_message(path) + ": " +
                               why);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail_read(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) ||
                                 S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode))) {
    ::close(fd);
    return fail_read("not a regular file");
  }
  constexpr std::size_t limit = 1 << 20;
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return fail_read(why);
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > limit) {
      ::close(fd);
      return fail_read("larger than 1 MiB");
    }
  }
  ::close(fd);
  return text;
}

std::string position(const toml::source_region& region, const std::string& where) {
  return where + ":" + std::to_string(region.begin.line) + ":" +
         std::to_string(region.begin.column);
}

}  // namespace

std::uint64_t parse_byte_size(std::string_view text) {
  const auto bad = [&](const std::string& why) -> std::uint64_t {
    throw parse_error("expected a size such as 512, 64KiB or 1MB, got " + quote_for_message(text) +
                      (why.empty() ? "" : " (" + why + ")"));
  };
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return bad("");
  std::uint64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  if (ec != std::errc{} || end != text.data() + digits) return bad("too large");
  const std::string_view unit = text.substr(digits);
  struct named {
    std::string_view name;
    std::uint64_t factor;
  };
  static constexpr named units[] = {
      {"", 1},
      {"B", 1},
      {"KiB", 1ULL << 10},
      {"MiB", 1ULL << 20},
      {"GiB", 1ULL << 30},
      {"KB", 1000},
      {"MB", 1000'000},
      {"GB", 1000'000'000},
  };
  for (const named& u : units) {
    if (u.name != unit) continue;
    if (number > std::numeric_limits<std::uint64_t>::max() / u.factor) return bad("too large");
    return number * u.factor;
  }
  return bad("unknown unit " + quote_for_message(unit) + "; use B, KiB, MiB, GiB, KB, MB or GB");
}

std::string_view fault_counter_name(fault_counter c) noexcept {
  switch (c) {
    case counter_errors:
      return "errors";
    case counter_latency:
      return "latency";
    case counter_partial:
      return "partial";
    case counter_outage:
      return "outage";
    case counter_slow_body:
      return "slow_body";
    case counter_envoy_abort:
      return "envoy_abort";
    case counter_envoy_delay:
      return "envoy_delay";
    case counter_cold_start:
      return "cold_start";
    case fault_counter_count:
      break;
  }
  return "unknown";
}

fault parse_fault(std::string_view spec) {
  const spec_call call = parse_spec_call(spec, fault_what);
  fault f;
  const auto* kind = std::find(std::begin(kind_names), std::end(kind_names), call.name);
  if (kind == std::end(kind_names)) {
    fail(spec, "unknown fault " + quoted_key(call.name) + " (known: " + join_names(kind_names) +
                   ")" + name_hint(call.name, kind_names));
  }
  f.kind = static_cast<fault_kind>(kind - std::begin(kind_names));
  // The distribution is not known yet: each key is first checked against the kind alone.
  const variant_set of_kind = variant_bit(f.kind);
  std::set<std::string, std::less<>> given;
  for (const spec_argument& arg : call.arguments) {
    const spec_key<fault>* key = find_spec_key(fault_keys, arg.key);
    if (key == nullptr || !key_applies(*key, of_kind)) {
      fail(spec, quoted_key(arg.key) + " does not apply to " + std::string(kind_name(f.kind)) +
                     " (its keys: " + spec_key_list(fault_keys, of_kind) + ")" +
                     spec_key_hint(arg.key, fault_keys, of_kind));
    }
    given.insert(arg.key);
    if (arg.is_list && arg.key != "value") fail(spec, quoted_key(arg.key) + " takes one value");
    key->read(f, spec_value{spec, fault_what, arg});
  }
  const auto require = [&](std::string_view key, std::string_view why) {
    if (!given.contains(key)) fail(spec, "missing " + quoted_key(key) + " " + std::string(why));
  };
  const auto refuse = [&](std::string_view key, std::string_view why) {
    if (given.contains(key)) fail(spec, quoted_key(key) + " " + std::string(why));
  };
  switch (f.kind) {
    case fault_kind::errors:
      break;
    case fault_kind::latency: {
      // Each distribution takes its own keys and no other: those of the table that apply to it
      // and not to every distribution.
      std::vector<std::string_view> own;
      for (const spec_key<fault>& k : fault_keys) {
        if (key_applies(k, in_effect(f)) &&
            (k.applies_to & every_distribution) != every_distribution)
          own.push_back(k.name);
      }
      const std::string name(distribution_name(f.distribution));
      for (const auto k : own)
        require(k, "(" + name + " latency takes " + quoted_key(own[0]) +
                       (own.size() > 1 ? " and " + quoted_key(own[1]) : "") + ")");
      for (const spec_argument& arg : call.arguments) {
        if (!key_applies(*find_spec_key(fault_keys, arg.key), in_effect(f))) {
          fail(spec, quoted_key(arg.key) + " does not apply to " + name + " latency");
        }
      }
      if (f.a > longest_injected_wait || f.b > longest_injected_wait)
        fail(spec, "a latency above 24h");
      if (f.distribution == latency_distribution::uniform && f.b < f.a) {
        fail(spec, "'hi' is below 'lo'");
      }
      if (f.distribution == latency_distribution::lognormal && !(f.sigma >= 0 && f.sigma <= 10)) {
        fail(spec, "'sigma' must be from 0 to 10");
      }
      if (f.distribution == latency_distribution::pareto && !(f.shape > 0 && f.shape <= 100)) {
        fail(spec, "'shape' must be above 0 and at most 100");
      }
      break;
    }
    case fault_kind::partial:
      if (given.contains("header") == given.contains("path")) {
        fail(spec, "give either 'header' (with 'value') or 'path', not both or neither");
      }
      if (given.contains("header")) {
        require("value", "(the header values that fail)");
        if (f.values.empty()) fail(spec, "'value' is an empty list");
      } else {
        refuse("value", "applies to 'header' only");
      }
      break;
    case fault_kind::outage:
      if (f.action != outage_action::status) {
        refuse("status", "applies to action=status only");
      }
      if (f.action == outage_action::pause && f.rate < 1) {
        fail(spec, "a pause stops the whole server: 'rate' must be 100%");
      }
      if (!given.contains("keys")) refuse("key_header", "applies with 'keys' only");
      break;
    case fault_kind::slow_body:
      require("size", "(the body's size)");
      require("speed", "(its speed)");
      break;
    case fault_kind::capacity:
      require("share", "(the share of the workers left)");
      if (f.rate < 1) fail(spec, "capacity is the whole service's: 'rate' must be 100%");
      break;
    case fault_kind::cold_start:
      require("factor", "(the slowdown at the start)");
      require("half_life", "(how fast it wears off)");
      break;
  }
  f.spec = canonical(f);
  return f;
}

std::string fault_keys_markdown() {
  std::vector<std::string> storage(std::begin(kind_names), std::end(kind_names));
  for (const std::string_view d : distribution_names) {
    storage.push_back("distribution=" + std::string(d));
  }
  const std::vector<std::string_view> names(storage.begin(), storage.end());
  return key_table_markdown(fault_keys, spec_variants{names, fault_groups});
}

fault_plan parse_fault_schedule(std::string_view text, const std::string& where) {
  if (auto problem = config::toml_shape_problem(text, [&](int line, int column) {
        return where + ":" + std::to_string(line) + ":" + std::to_string(column);
      })) {
    throw fault_schedule_error(*problem);
  }
  toml::table root;
  try {
    root = toml::parse(text, where);
  } catch (const toml::parse_error& e) {
    throw fault_schedule_error(position(e.source(), where) + ": " + std::string(e.description()));
  }
  fault_plan plan;
  for (const auto& [key, node] : root) {
    if (key.str() != "fault") {
      throw fault_schedule_error(position(key.source(), where) + ": unknown key '" +
                                 std::string(key.str()) + "' (a schedule has [[fault]] entries)");
    }
    const toml::array* entries = node.as_array();
    if (entries == nullptr || !entries->is_array_of_tables()) {
      throw fault_schedule_error(position(node.source(), where) +
                                 ": 'fault' must be an array of tables ([[fault]])");
    }
    for (const toml::node& entry_node : *entries) {
      const toml::table& entry = *entry_node.as_table();
      const auto at_of = [&](const toml::node& n) { return position(n.source(), where); };
      scheduled_fault sf;
      std::optional<duration> length;
      std::optional<duration> until;
      bool has_fault = false;
      for (const auto& item : entry) {
        // Named, not a structured binding: clang 14 (the fuzz preset) cannot capture those.
        const toml::node& v = item.second;
        const std::string_view name = item.first.str();
        const auto text_of = [&]() -> std::string {
          if (const auto* s = v.as_string()) return s->get();
          throw fault_schedule_error(at_of(v) + ": '" + std::string(name) +
                                     "' must be a string such as \"10s\"");
        };
        const auto duration_of = [&]() {
          const std::string s = text_of();
          try {
            return parse_duration(s);
          } catch (const parse_error& e) {
            throw fault_schedule_error(at_of(v) + ": '" + std::string(name) + "': " + e.what());
          }
        };
        if (name == "at") {
          sf.when.start = duration_of();
        } else if (name == "for") {
          length = duration_of();
          if (length->count() == 0) {
            throw fault_schedule_error(at_of(v) + ": 'for' must be more than 0");
          }
        } else if (name == "until") {
          until = duration_of();
        } else if (name == "fault") {
          const std::string spec = text_of();
          try {
            sf.what = parse_fault(spec);
          } catch (const parse_error& e) {
            throw fault_schedule_error(at_of(v) + ": " + e.what());
          }
          has_fault = true;
        } else {
          throw fault_schedule_error(at_of(v) + ": unknown key '" + std::string(name) +
                                     "' (a [[fault]] has at, for or until, and fault)");
        }
      }
      if (!has_fault) {
        throw fault_schedule_error(at_of(entry_node) + ": a [[fault]] without 'fault' (such as " +
                                   "fault = \"errors(rate=50%, status=503)\")");
      }
      if (length && until) {
        throw fault_schedule_error(at_of(entry_node) + ": give 'for' or 'until', not both");
      }
      if (length) {
        sf.when.end = saturating_add(sf.when.start, *length);
      } else if (until) {
        if (*until <= sf.when.start) {
          throw fault_schedule_error(at_of(entry_node) + ": 'until' is not after 'at'");
        }
        sf.when.end = *until;
      }
      plan.faults.push_back(std::move(sf));
    }
  }
  return plan;
}

fault_plan read_fault_schedule(const std::string& path) {
  return parse_fault_schedule(read_limited(path), path);
}

std::optional<std::string> network_refusal(const fault_plan& plan) {
  for (const scheduled_fault& f : plan.faults) {
    if (f.what.kind == fault_kind::capacity || f.what.kind == fault_kind::cold_start) {
      return f.what.spec +
             ": this fault is a system service's (its workers and service time): give it to "
             "a service of a system file, which `backoff sim` and `backoff serve --system` run";
    }
  }
  return std::nullopt;
}

std::string describe(const scheduled_fault& f) {
  std::string out = f.what.spec + " from " + format_duration(f.when.start);
  if (f.when.end != duration::max()) out += " to " + format_duration(f.when.end);
  return out;
}

}  // namespace backoff::faults
