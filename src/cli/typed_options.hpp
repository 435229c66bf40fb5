// SPDX-License-Identifier: Apache-2.0
// Typed command-line options: one way for every subcommand to take a duration, a size, a
// percentage, a seed or a count, instead of binding a string and parsing it later in each file.
// The value is checked while CLI11 parses, so a bad one is one line naming the flag and quoting
// the value, with the command's usage status (dispatch.cpp prints it):
//
//   backoff load: --timeout: bad duration "2x" (unknown unit "x") (see 'backoff load --help')
//
// and the help shows what the flag takes (DURATION, SIZE, PERCENT, SEED, N) instead of VALUE.
//
//   duration timeout = std::chrono::seconds(10);
//   add_duration_option(*sub, "--timeout", timeout, "Per request", {.positive = true})
//       ->capture_default_str();                                  // --timeout DURATION=10s
//   std::optional<std::uint64_t> limit;                           // nullopt: not given
//   add_size_option(*sub, "--memory-limit", limit, "...", {.none = true});
//   std::uint32_t runs = 1;
//   add_count_option<std::uint32_t>(*sub, "-r,--runs", runs, "Runs", 1, 100'000);
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "backoff/duration.hpp"
#include "config/numbers.hpp"
#include "config/size.hpp"

namespace backoff::cli {

struct duration_rules {
  bool positive = false;  // refuse 0
  bool bare_seconds =
      false;  // a plain number is seconds ("10" == 10s), as the seed's Go client's -lambda
};

// A duration in the syntax of parse_flag_duration (output.hpp): "1.5s", "250ms", "1h30m", or
// bare seconds written with digits ("5", "0.25"). With rules.bare_seconds, any number a C
// program reads as a double ("1e1", "10.") is seconds as well, up to 10^9. capture_default_str()
// shows the default as format_duration writes it; give default_str() to show it otherwise.
CLI::Option* add_duration_option(CLI::App& app, const std::string& name, duration& value,
                                 const std::string& help, duration_rules rules = {});
CLI::Option* add_duration_option(CLI::App& app, const std::string& name,
                                 std::optional<duration>& value, const std::string& help,
                                 duration_rules rules = {});

// A size in bytes, in config/size.hpp's syntax ("512MiB", "4GiB", "1.5G", "100000"). "none" (and
// "0") are 0 only with syntax.none, for a limit where 0 means no limit.
CLI::Option* add_size_option(CLI::App& app, const std::string& name, std::uint64_t& bytes,
                             const std::string& help, config::size_syntax syntax = {.none = false});
CLI::Option* add_size_option(CLI::App& app, const std::string& name,
                             std::optional<std::uint64_t>& bytes, const std::string& help,
                             config::size_syntax syntax = {.none = false});

// "10%" or "0.1" -> 0.1, in [0,1] (the library's reading of a percentage, spec_fraction).
CLI::Option* add_percent_option(CLI::App& app, const std::string& name, double& fraction,
                                const std::string& help);

// A 64-bit seed: a whole number written with digits only, 0 to 18446744073709551615.
CLI::Option* add_seed_option(CLI::App& app, const std::string& name, std::uint64_t& seed,
                             const std::string& help);
// The same for a seed whose absence means "draw a fresh one" (or "keep the scenario's").
CLI::Option* add_seed_option(CLI::App& app, const std::string& name,
                             std::optional<std::uint64_t>& seed, const std::string& help);

// A whole number written with digits only, for the integers the CLI reads outside its options
// too (a scheduler's environment): config/numbers.hpp's.
using config::parse_whole_number;

namespace typed_options_detail {
CLI::Option* add_count(CLI::App& app, const std::string& name, const std::string& help,
                       std::uint64_t min, std::uint64_t max,
                       std::function<void(std::uint64_t)> store,
                       std::function<std::string()> shown);
}  // namespace typed_options_detail

template <class Int>  // unsigned integer types
CLI::Option* add_count_option(CLI::App& app, const std::string& name, Int& value,
                              const std::string& help, Int min, Int max) {
  static_assert(std::numeric_limits<Int>::is_integer && !std::numeric_limits<Int>::is_signed,
                "add_count_option takes unsigned integer types");
  return typed_options_detail::add_count(
      app, name, help, min, max, [&value](std::uint64_t v) { value = static_cast<Int>(v); },
      [&value] { return std::to_string(value); });
}

// The same for a count whose absence means a default worked out later.
template <class Int>
CLI::Option* add_count_option(CLI::App& app, const std::string& name, std::optional<Int>& value,
                              const std::string& help, Int min, Int max) {
  static_assert(std::numeric_limits<Int>::is_integer && !std::numeric_limits<Int>::is_signed,
                "add_count_option takes unsigned integer types");
  return typed_options_detail::add_count(
      app, name, help, min, max, [&value](std::uint64_t v) { value = static_cast<Int>(v); },
      [&value] { return value ? std::to_string(*value) : std::string(); });
}

}  // namespace backoff::cli
