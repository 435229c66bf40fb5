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
#include <limits>
#include <set>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "config/toml_shape.hpp"

namespace backoff::net {
namespace {

constexpr std::string_view fault_what = "fault";

// No injected wait is longer than a day: a heavy-tailed draw or a huge header value would
// otherwise overflow the clock, and a day is past any experiment.
constexpr duration longest_wait = std::chrono::hours(24);

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
std::string header_name(std::string_view spec, std::string_view text) {
  std::string out;
  for (const char c : text) {
    const bool token = std::isalnum(static_cast<unsigned char>(c)) ||
                       std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!token) fail(spec, "'header' must be a header name, got " + quote_for_message(text));
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (out.empty()) fail(spec, "'header' is empty");
  return out;
}

const std::set<std::string_view>& keys_of(fault_kind kind) {
  static const std::set<std::string_view> errors{"rate", "status"};
  static const std::set<std::string_view> latency{
      "rate", "delay", "distribution", "mean", "lo", "hi", "median", "sigma", "scale", "shape"};
  static const std::set<std::string_view> partial{"rate", "header", "value", "path", "status"};
  static const std::set<std::string_view> outage{"rate", "status", "action"};
  static const std::set<std::string_view> slow{"rate", "size", "speed"};
  switch (kind) {
    case fault_kind::errors:
      return errors;
    case fault_kind::latency:
      return latency;
    case fault_kind::partial:
      return partial;
    case fault_kind::outage:
      return outage;
    case fault_kind::slow_body:
      return slow;
  }
  return errors;
}

std::string_view kind_name(fault_kind kind) {
  switch (kind) {
    case fault_kind::errors:
      return "errors";
    case fault_kind::latency:
      return "latency";
    case fault_kind::partial:
      return "partial";
    case fault_kind::outage:
      return "outage";
    case fault_kind::slow_body:
      return "slow_body";
  }
  return "errors";
}

std::string_view distribution_name(latency_distribution d) {
  switch (d) {
    case latency_distribution::fixed:
      return "fixed";
    case latency_distribution::uniform:
      return "uniform";
    case latency_distribution::exponential:
      return "exponential";
    case latency_distribution::lognormal:
      return "lognormal";
    case latency_distribution::pareto:
      return "pareto";
  }
  return "fixed";
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

// The canonical text of a parsed fault: every key that matters, in a fixed order.
std::string canonical(const fault& f) {
  std::string out(kind_name(f.kind));
  out += "(";
  std::vector<std::string> parts;
  switch (f.kind) {
    case fault_kind::errors:
      parts.push_back("status=" + std::to_string(f.status));
      break;
    case fault_kind::latency:
      parts.push_back("distribution=" + std::string(distribution_name(f.distribution)));
      switch (f.distribution) {
        case latency_distribution::fixed:
          parts.push_back("delay=" + format_duration(f.a));
          break;
        case latency_distribution::uniform:
          parts.push_back("lo=" + format_duration(f.a));
          parts.push_back("hi=" + format_duration(f.b));
          break;
        case latency_distribution::exponential:
          parts.push_back("mean=" + format_duration(f.a));
          break;
        case latency_distribution::lognormal:
          parts.push_back("median=" + format_duration(f.a));
          parts.push_back("sigma=" + format_real(f.sigma));
          break;
        case latency_distribution::pareto:
          parts.push_back("scale=" + format_duration(f.a));
          parts.push_back("shape=" + format_real(f.shape));
          break;
      }
      break;
    case fault_kind::partial: {
      if (!f.header.empty()) {
        parts.push_back("header=" + f.header);
        std::string values;
        for (const auto& v : f.values) values += (values.empty() ? "" : ", ") + v;
        parts.push_back("value=[" + values + "]");
      } else {
        parts.push_back("path=" + f.path_prefix);
      }
      parts.push_back("status=" + std::to_string(f.status));
      break;
    }
    case fault_kind::outage:
      if (f.action == outage_action::status) {
        parts.push_back("status=" + std::to_string(f.status));
      } else {
        parts.push_back(f.action == outage_action::reset ? "action=reset" : "action=hang");
      }
      break;
    case fault_kind::slow_body:
      parts.push_back("size=" + format_bytes(f.body_size));
      parts.push_back("speed=" + format_real(f.bytes_per_s) + "B/s");
      break;
  }
  parts.push_back("rate=" + format_fraction(f.rate));
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out + ")";
}

// Requests whose header `name` has one of `values` (compared exactly), or whose path starts
// with the prefix.
bool matches(const fault& f, const request_view& request) {
  if (!f.header.empty()) {
    if (!request.header) return false;
    const std::string_view value = request.header(f.header);
    return std::find(f.values.begin(), f.values.end(), value) != f.values.end();
  }
  return request.path.starts_with(f.path_prefix);
}

bool hits(double rate, random_generator& rng) {
  if (rate >= 1.0) return true;
  if (rate <= 0.0) return false;
  return uniform01(rng) < rate;
}

duration clamp_wait(double ns) {
  if (!(ns > 0)) return duration{0};
  if (ns >= static_cast<double>(longest_wait.count())) return longest_wait;
  return duration(static_cast<std::int64_t>(ns));
}

duration draw_latency(const fault& f, random_generator& rng) {
  const double a = static_cast<double>(f.a.count());
  switch (f.distribution) {
    case latency_distribution::fixed:
      return f.a;
    case latency_distribution::uniform:
      return clamp_wait(uniform(rng, a, static_cast<double>(f.b.count())));
    case latency_distribution::exponential:
      return clamp_wait(exponential_variate(rng, a));
    case latency_distribution::lognormal:
      return clamp_wait(a * std::exp(f.sigma * standard_normal(rng)));
    case latency_distribution::pareto:
      // Inversion: scale / (1 - u)^(1 / shape), with 1 - u in (0, 1].
      return clamp_wait(a / std::pow(1.0 - uniform01(rng), 1.0 / f.shape));
  }
  return duration{0};
}

// A whole number of at most 19 digits and nothing else (an Envoy header's value).
std::optional<std::uint64_t> whole_number(std::string_view text) {
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return n;
}

// Envoy's percentage header: a whole number of hundredths, at most 100 % (Envoy caps a header
// at the configured percentage, here 100 %); absent or malformed: 100 %.
double envoy_share(const request_view& request, std::string_view name) {
  const auto n = whole_number(request.header(name));
  if (!n) return 1.0;
  return std::min<double>(static_cast<double>(*n), 100.0) / 100.0;
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
    case fault_counter_count:
      break;
  }
  return "unknown";
}

fault parse_fault(std::string_view spec) {
  const spec_call call = parse_spec_call(spec, fault_what);
  fault f;
  if (call.name == "errors") {
    f.kind = fault_kind::errors;
  } else if (call.name == "latency") {
    f.kind = fault_kind::latency;
  } else if (call.name == "partial") {
    f.kind = fault_kind::partial;
  } else if (call.name == "outage") {
    f.kind = fault_kind::outage;
  } else if (call.name == "slow_body") {
    f.kind = fault_kind::slow_body;
  } else {
    fail(spec, "unknown fault " + quoted_key(call.name) +
                   " (expected errors, latency, partial, outage or slow_body)");
  }
  const auto& allowed = keys_of(f.kind);
  std::set<std::string, std::less<>> given;
  const spec_argument* distribution = nullptr;
  for (const spec_argument& arg : call.arguments) {
    if (!allowed.contains(arg.key)) {
      std::string keys;
      for (const auto k : allowed) keys += (keys.empty() ? "" : ", ") + std::string(k);
      fail(spec, quoted_key(arg.key) + " does not apply to " + std::string(kind_name(f.kind)) +
                     " (its keys: " + keys + ")");
    }
    given.insert(arg.key);
    if (arg.is_list && arg.key != "value") fail(spec, quoted_key(arg.key) + " takes one value");
    if (arg.key == "rate") {
      f.rate = spec_fraction(spec, arg, fault_what);
    } else if (arg.key == "status") {
      f.status = parse_status(spec, arg.key, arg.value);
    } else if (arg.key == "distribution") {
      distribution = &arg;
    } else if (arg.key == "delay" || arg.key == "mean" || arg.key == "lo" || arg.key == "median" ||
               arg.key == "scale") {
      f.a = spec_duration(spec, arg, fault_what);
    } else if (arg.key == "hi") {
      f.b = spec_duration(spec, arg, fault_what);
    } else if (arg.key == "sigma") {
      f.sigma = spec_number(spec, arg, fault_what);
    } else if (arg.key == "shape") {
      f.shape = spec_number(spec, arg, fault_what);
    } else if (arg.key == "header") {
      f.header = header_name(spec, arg.value);
    } else if (arg.key == "value") {
      f.values = arg.is_list ? arg.items : std::vector<std::string>{arg.value};
    } else if (arg.key == "path") {
      if (!arg.value.starts_with('/')) {
        fail(spec, "'path' must start with '/', got " + quote_for_message(arg.value));
      }
      f.path_prefix = arg.value;
    } else if (arg.key == "action") {
      if (arg.value == "status") {
        f.action = outage_action::status;
      } else if (arg.value == "reset") {
        f.action = outage_action::reset;
      } else if (arg.value == "hang") {
        f.action = outage_action::hang;
      } else {
        fail(spec, "'action' must be status, reset or hang, got " + quote_for_message(arg.value));
      }
    } else if (arg.key == "size") {
      std::uint64_t n = 0;
      try {
        n = parse_byte_size(arg.value);
      } catch (const parse_error&) {
      }
      if (n == 0 || n > largest_body) {
        fail(spec, "'size' must be a size from 1B to 1GiB (16384, 16KiB, 1MiB), got " +
                       quote_for_message(arg.value));
      }
      f.body_size = n;
    } else if (arg.key == "speed") {
      const auto s = parse_speed(arg.value);
      if (!s) {
        fail(spec, "'speed' must be a size per second above 0 (4KiB/s, 512B/s), got " +
                       quote_for_message(arg.value));
      }
      f.bytes_per_s = *s;
    }
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
      if (distribution == nullptr) {
        f.distribution = latency_distribution::fixed;
      } else if (distribution->value == "fixed") {
        f.distribution = latency_distribution::fixed;
      } else if (distribution->value == "uniform") {
        f.distribution = latency_distribution::uniform;
      } else if (distribution->value == "exponential") {
        f.distribution = latency_distribution::exponential;
      } else if (distribution->value == "lognormal") {
        f.distribution = latency_distribution::lognormal;
      } else if (distribution->value == "pareto") {
        f.distribution = latency_distribution::pareto;
      } else {
        fail(spec, "'distribution' must be fixed, uniform, exponential, lognormal or pareto, got " +
                       quote_for_message(distribution->value));
      }
      // Each distribution takes its own keys and no other.
      std::vector<std::string_view> own;
      switch (f.distribution) {
        case latency_distribution::fixed:
          own = {"delay"};
          break;
        case latency_distribution::uniform:
          own = {"lo", "hi"};
          break;
        case latency_distribution::exponential:
          own = {"mean"};
          break;
        case latency_distribution::lognormal:
          own = {"median", "sigma"};
          break;
        case latency_distribution::pareto:
          own = {"scale", "shape"};
          break;
      }
      const std::string name(distribution_name(f.distribution));
      for (const auto k : own)
        require(k, "(" + name + " latency takes " + quoted_key(own[0]) +
                       (own.size() > 1 ? " and " + quoted_key(own[1]) : "") + ")");
      for (const auto k : {"delay", "mean", "lo", "hi", "median", "sigma", "scale", "shape"}) {
        if (given.contains(k) &&
            std::find(own.begin(), own.end(), std::string_view(k)) == own.end()) {
          fail(spec, quoted_key(k) + " does not apply to " + name + " latency");
        }
      }
      if (f.a > longest_wait || f.b > longest_wait) fail(spec, "a latency above 24h");
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
      break;
    case fault_kind::slow_body:
      require("size", "(the body's size)");
      require("speed", "(its speed)");
      break;
  }
  f.spec = canonical(f);
  return f;
}

fault parse_errors_flag(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view rate = text.substr(0, colon);
  const std::string_view status =
      colon == text.npos ? std::string_view("503") : text.substr(colon + 1);
  const std::string spec =
      "errors(rate=" + std::string(rate) + ", status=" + std::string(status) + ")";
  try {
    return parse_fault(spec);
  } catch (const parse_error& e) {
    throw parse_error(quote_for_message(text) + ": expected RATE[:STATUS] such as 5%:503 (" +
                      e.what() + ")");
  }
}

fault parse_latency_flag(std::string_view text) {
  // A bare duration is a fixed latency; otherwise DIST(ARGS).
  try {
    const duration d = parse_duration(text);
    return parse_fault("latency(delay=" + format_duration(d) + ")");
  } catch (const parse_error&) {
  }
  const auto open = text.find('(');
  if (open == text.npos || !text.ends_with(")")) {
    throw parse_error(
        quote_for_message(text) +
        ": expected a duration (100ms) or a distribution such as exponential(mean=50ms)");
  }
  const std::string_view name = text.substr(0, open);
  const std::string_view args = text.substr(open + 1, text.size() - open - 2);
  const bool blank = args.find_first_not_of(" \t") == args.npos;
  return parse_fault("latency(distribution=" + std::string(name) + (blank ? "" : ", ") +
                     std::string(args) + ")");
}

fault parse_partial_flag(std::string_view text) {
  return parse_fault("partial(" + std::string(text) + ")");
}

scheduled_fault parse_outage_flag(std::string_view text) {
  const auto bad = [&](const std::string& why) -> scheduled_fault {
    throw parse_error(quote_for_message(text) + ": " + why +
                      " (expected START+LENGTH[:STATUS|reset|hang], such as 10s+5s:503)");
  };
  const auto plus = text.find('+');
  if (plus == text.npos) return bad("no '+'");
  const auto colon = text.find(':', plus);
  scheduled_fault out;
  try {
    out.when.start = parse_duration(text.substr(0, plus));
    const duration length =
        parse_duration(text.substr(plus + 1, colon == text.npos ? text.npos : colon - plus - 1));
    if (length.count() == 0) return bad("the length is 0");
    out.when.end = saturating_add(out.when.start, length);
  } catch (const parse_error& e) {
    return bad(e.what());
  }
  std::string spec = "outage()";
  if (colon != text.npos) {
    const std::string_view what = text.substr(colon + 1);
    if (what == "reset" || what == "hang") {
      spec = "outage(action=" + std::string(what) + ")";
    } else {
      spec = "outage(status=" + std::string(what) + ")";
    }
  }
  try {
    out.what = parse_fault(spec);
  } catch (const parse_error& e) {
    return bad(e.what());
  }
  return out;
}

fault parse_slow_body_flag(std::string_view text) {
  const auto at = text.find('@');
  if (at == text.npos) {
    throw parse_error(quote_for_message(text) + ": expected SIZE@SPEED such as 16KiB@4KiB/s");
  }
  return parse_fault("slow_body(size=" + std::string(text.substr(0, at)) +
                     ", speed=" + std::string(text.substr(at + 1)) + ")");
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

std::string describe(const scheduled_fault& f) {
  std::string out = f.what.spec + " from " + format_duration(f.when.start);
  if (f.when.end != duration::max()) out += " to " + format_duration(f.when.end);
  return out;
}

fault_decision decide(const fault_plan& plan, duration since_start, const request_view& request,
                      random_generator& rng) {
  fault_decision d;
  // A service that is down answers at once: outages and partial outages first, without latency.
  for (const scheduled_fault& sf : plan.faults) {
    if (!sf.when.contains(since_start)) continue;
    const fault& f = sf.what;
    if (f.kind == fault_kind::outage) {
      if (!hits(f.rate, rng)) continue;
      d.fired |= 1u << counter_outage;
      switch (f.action) {
        case outage_action::reset:
          d.reset = true;
          break;
        case outage_action::hang:
          d.hold_until = sf.when.end;
          break;
        case outage_action::status:
          d.abort_status = f.status;
          break;
      }
      return d;
    }
    if (f.kind == fault_kind::partial && matches(f, request)) {
      if (!hits(f.rate, rng)) continue;
      d.fired |= 1u << counter_partial;
      d.abort_status = f.status;
      return d;
    }
  }
  // Then as Envoy's fault filter: delays, then an abort.
  for (const scheduled_fault& sf : plan.faults) {
    if (sf.what.kind != fault_kind::latency || !sf.when.contains(since_start)) continue;
    if (!hits(sf.what.rate, rng)) continue;
    d.fired |= 1u << counter_latency;
    d.delay = std::min(d.delay + draw_latency(sf.what, rng), longest_wait);
  }
  if (plan.envoy_headers && request.header) {
    if (const auto ms = whole_number(request.header("x-envoy-fault-delay-request"))) {
      if (hits(envoy_share(request, "x-envoy-fault-delay-request-percentage"), rng)) {
        d.fired |= 1u << counter_envoy_delay;
        const auto capped = std::min<std::uint64_t>(
            *ms, static_cast<std::uint64_t>(
                     std::chrono::duration_cast<std::chrono::milliseconds>(longest_wait).count()));
        d.delay = std::min(d.delay + std::chrono::milliseconds(capped), longest_wait);
      }
    }
    if (const auto status = whole_number(request.header("x-envoy-fault-abort-request"));
        status && *status >= 200 && *status <= 599) {
      if (hits(envoy_share(request, "x-envoy-fault-abort-request-percentage"), rng)) {
        d.fired |= 1u << counter_envoy_abort;
        d.abort_status = static_cast<int>(*status);
        return d;
      }
    }
  }
  for (const scheduled_fault& sf : plan.faults) {
    if (sf.what.kind != fault_kind::errors || !sf.when.contains(since_start)) continue;
    if (!hits(sf.what.rate, rng)) continue;
    d.fired |= 1u << counter_errors;
    d.abort_status = sf.what.status;
    return d;
  }
  for (const scheduled_fault& sf : plan.faults) {
    if (sf.what.kind != fault_kind::slow_body || !sf.when.contains(since_start)) continue;
    if (!hits(sf.what.rate, rng)) continue;
    d.fired |= 1u << counter_slow_body;
    d.slow = slow_body_plan{sf.what.body_size, sf.what.bytes_per_s};
    break;
  }
  return d;
}

}  // namespace backoff::net
