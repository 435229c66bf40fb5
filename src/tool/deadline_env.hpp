// SPDX-License-Identifier: Apache-2.0
// The deadline a retry run hands the commands it starts, and what a nested run makes of it.
//
// The contract: a command gets BACKOFF_DEADLINE (Unix seconds, whole, rounded down) and
// BACKOFF_DEADLINE_OWNER ("PID:START": the backoff process that set it and its start time in
// clock ticks since boot, /proc/PID/stat field 22, so that a reused pid is not taken for it). A
// nested `backoff try` honours the deadline only while its owner lives: a daemon started by an
// attempt outlives the run, and must not inherit a deadline that ended with it. A deadline
// without an owner (set by hand: `BACKOFF_DEADLINE=$(date -d 17:00 +%s) backoff try ...`) is
// honoured as given, and so is one whose owner's pid is there but cannot be checked (/proc not
// readable). Whatever is ignored or unchecked, and why, is said in `note`.
//
//   const auto inherited = read_inherited_deadline(std::getenv("BACKOFF_DEADLINE"),
//                                                  std::getenv("BACKOFF_DEADLINE_OWNER"));
//   if (!inherited.note.empty()) log(inherited.note);
//   export_deadline(child_environment, attempt_deadline);   // or unsets both without one
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backoff/duration.hpp"

namespace backoff::tool {

struct inherited_deadline {
  std::optional<duration> deadline;  // steady time; none when absent or ignored
  std::string note;  // why a deadline that was there is ignored (or unchecked); empty otherwise
};

inherited_deadline read_inherited_deadline(const char* deadline, const char* owner);

// Sets BACKOFF_DEADLINE and BACKOFF_DEADLINE_OWNER (this process) for a steady-time deadline, or
// removes both (an outer run's) when there is none.
void export_deadline(std::vector<std::string>& environment, std::optional<duration> deadline);

// "PID:START" of a process, or empty when it is gone (or /proc cannot tell).
std::string process_identity(long pid);

}  // namespace backoff::tool
