// SPDX-License-Identifier: Apache-2.0
#include "typed_options.hpp"

#include <chrono>
#include <functional>
#include <utility>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "output.hpp"

namespace backoff::cli {
namespace {

// The one line CLI11 prints after the flag's name: `bad duration "2x" (unknown unit "x")`.
std::string bad(std::string_view kind, std::string_view text, std::string_view why) {
  return "bad " + std::string(kind) + " " + quote_for_message(text) + " (" + std::string(why) + ")";
}

// The library's message without its own `bad duration "TEXT": `, which bad() says already.
// parse_flag_duration reads bare seconds as TEXT + "s", so that prefix is removed too.
std::string duration_reason(std::string_view text, std::string message) {
  for (const std::string& quoted :
       {quote_for_message(text), quote_for_message(std::string(text) + "s")}) {
    const std::string prefix = "bad duration " + quoted + ": ";
    if (message.starts_with(prefix)) return message.substr(prefix.size());
  }
  return message;
}

std::optional<duration> read_duration(std::string_view text, duration_rules rules,
                                      std::string& why) {
  std::optional<duration> d;
  if (rules.bare_seconds) {
    if (const auto seconds = config::parse_bare_seconds(text, why)) {
      d = std::chrono::duration_cast<duration>(std::chrono::duration<double>(*seconds));
    } else if (!why.empty()) {
      return std::nullopt;
    }
  }
  if (!d) {
    try {
      d = parse_flag_duration(text);
    } catch (const parse_error& e) {
      why = duration_reason(text, e.what());
      return std::nullopt;
    }
  }
  if (rules.positive && d->count() == 0) {
    why = "must be more than 0";
    return std::nullopt;
  }
  return d;
}

// A check that changes nothing (the option's results keep the text as given, for callers that
// pass it on, e.g. into a job file) and a callback that converts the same text again.
template <class Read>
CLI::Validator checked_by(std::string_view kind, Read read) {
  return CLI::Validator(
      [kind = std::string(kind), read](std::string& text) -> std::string {
        std::string why;
        return read(text, why) ? std::string() : bad(kind, text, why);
      },
      "");
}

template <class Read, class Store>
CLI::Option* add_typed(CLI::App& app, const std::string& name, const std::string& help,
                       std::string_view kind, const char* type, Read read, Store store) {
  CLI::Option* opt = app.add_option_function<std::string>(
      name,
      [read, store](const std::string& text) {
        std::string why;
        if (auto v = read(text, why)) store(std::move(*v));
      },
      help);
  opt->type_name(type);
  opt->check(checked_by(kind, read));
  return opt;
}

}  // namespace

CLI::Option* add_duration_option(CLI::App& app, const std::string& name, duration& value,
                                 const std::string& help, duration_rules rules) {
  const auto read = [rules](std::string_view text, std::string& why) {
    return read_duration(text, rules, why);
  };
  return add_typed(app, name, help, "duration", "DURATION", read,
                   [&value](duration d) { value = d; })
      ->default_function([&value] { return format_duration(value); });
}

CLI::Option* add_duration_option(CLI::App& app, const std::string& name,
                                 std::optional<duration>& value, const std::string& help,
                                 duration_rules rules) {
  const auto read = [rules](std::string_view text, std::string& why) {
    return read_duration(text, rules, why);
  };
  return add_typed(app, name, help, "duration", "DURATION", read,
                   [&value](duration d) { value = d; })
      ->default_function([&value] { return value ? format_duration(*value) : std::string(); });
}

CLI::Option* add_size_option(CLI::App& app, const std::string& name, std::uint64_t& bytes,
                             const std::string& help, config::size_syntax syntax) {
  const auto read = [syntax](std::string_view text, std::string& why) {
    return config::parse_size(text, why, syntax);
  };
  return add_typed(app, name, help, "size", "SIZE", read, [&bytes](std::uint64_t b) { bytes = b; })
      ->default_function([&bytes] { return std::to_string(bytes); });
}

CLI::Option* add_size_option(CLI::App& app, const std::string& name,
                             std::optional<std::uint64_t>& bytes, const std::string& help,
                             config::size_syntax syntax) {
  const auto read = [syntax](std::string_view text, std::string& why) {
    return config::parse_size(text, why, syntax);
  };
  return add_typed(app, name, help, "size", "SIZE", read, [&bytes](std::uint64_t b) { bytes = b; })
      ->default_function([&bytes] { return bytes ? std::to_string(*bytes) : std::string(); });
}

CLI::Option* add_percent_option(CLI::App& app, const std::string& name, double& fraction,
                                const std::string& help) {
  const auto read = [name](std::string_view text, std::string& why) -> std::optional<double> {
    try {
      return spec_fraction(text, spec_argument{name, std::string(text), 1, false, {}}, "flag");
    } catch (const parse_error&) {
      why = "expected a percentage from 0% to 100%, or a fraction from 0 to 1";
      return std::nullopt;
    }
  };
  return add_typed(app, name, help, "percentage", "PERCENT", read,
                   [&fraction](double f) { fraction = f; })
      ->default_function([&fraction] { return format_fraction(fraction); });
}

namespace {
constexpr std::uint64_t max_seed = std::numeric_limits<std::uint64_t>::max();
std::optional<std::uint64_t> read_seed(std::string_view text, std::string& why) {
  return parse_whole_number(text, 0, max_seed, why);
}
}  // namespace

CLI::Option* add_seed_option(CLI::App& app, const std::string& name, std::uint64_t& seed,
                             const std::string& help) {
  return add_typed(app, name, help, "seed", "SEED", read_seed,
                   [&seed](std::uint64_t s) { seed = s; })
      ->default_function([&seed] { return std::to_string(seed); });
}

CLI::Option* add_seed_option(CLI::App& app, const std::string& name,
                             std::optional<std::uint64_t>& seed, const std::string& help) {
  return add_typed(app, name, help, "seed", "SEED", read_seed,
                   [&seed](std::uint64_t s) { seed = s; })
      ->default_function([&seed] { return seed ? std::to_string(*seed) : std::string(); });
}

namespace typed_options_detail {

CLI::Option* add_count(CLI::App& app, const std::string& name, const std::string& help,
                       std::uint64_t min, std::uint64_t max,
                       std::function<void(std::uint64_t)> store,
                       std::function<std::string()> shown) {
  const auto read = [min, max](std::string_view text, std::string& why) {
    return parse_whole_number(text, min, max, why);
  };
  return add_typed(app, name, help, "number", "N", read, std::move(store))
      ->default_function(std::move(shown));
}

}  // namespace typed_options_detail

}  // namespace backoff::cli
