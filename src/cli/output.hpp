// SPDX-License-Identifier: Apache-2.0
// Small text helpers shared by the subcommands: human-readable output, and reading a file of
// bounded size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

#include "backoff/duration.hpp"

namespace backoff::cli {

// A duration for people: rounded to 4 significant digits at most, then in the library's
// duration syntax ("1.234s", "271.8ms", "1h4m").
std::string human_duration(duration d);

// Flushes std::cout. On a write error (a full disk, /dev/full, a file system gone) prints
// "WHO: cannot write to standard output: REASON" on stderr and returns false: callers then exit
// with status 1 (the retry tool, 125), never 0 with the output lost.
// `note`, when given, ends the line (the retry tool's "(the command's status was N)").
bool flush_stdout(std::string_view who, std::string_view note = {});

// 64 random bits from the kernel (getrandom), for a run without --seed. Not std::random_device:
// constructing one runs CPUID, which a virtual machine traps, and a start of the retry tool paid
// for two.
std::uint64_t fresh_seed();

// A duration flag's value: a duration of the library's grammar ("1.5s", "250ms", "1h30m") or, as
// GNU timeout takes them, bare seconds ("5", "0.25"). Throws parse_error. Specs and HTTP
// parameters keep requiring units; only the CLI's own flags take bare seconds.
duration parse_flag_duration(std::string_view text);

// Seconds as the shortest decimal that reads back as the same double (CSV and JSON fields).
std::string seconds_text(duration d);

// Reads `in` to its end, but never more than `limit` bytes: a scenario or a script is a few KiB,
// and /dev/zero (or a runaway pipe) would otherwise fill memory. Sets `too_large` (and returns
// what was read) when there was more; a read error leaves `in.bad()`.
std::string read_at_most(std::istream& in, std::size_t limit, bool& too_large);

}  // namespace backoff::cli
