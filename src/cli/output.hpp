// Small text helpers shared by the subcommands' human-readable output.
#pragma once

#include <string>

#include "backoff/duration.hpp"

namespace backoff::cli {

// A duration for people: rounded to 4 significant digits at most, then in the library's
// duration syntax ("1.234s", "271.8ms", "1h4m").
std::string human_duration(duration d);

// Seconds as the shortest decimal that reads back as the same double (CSV and JSON fields).
std::string seconds_text(duration d);

}  // namespace backoff::cli
