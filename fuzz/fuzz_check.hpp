// SPDX-License-Identifier: Apache-2.0
// What every fuzzer asserts about errors, and how it fails: a property that does not hold prints
// what it expected and the input's text, then aborts, which libFuzzer reports as a crash and
// saves the input (scripts/fuzz.sh moves it to fuzz/regressions/<target>/ for review).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace backoff::fuzz {

[[noreturn]] inline void fail(std::string_view what, std::string_view detail = {}) {
  std::fprintf(stderr, "\nfuzz property violated: %.*s\n", static_cast<int>(what.size()),
               what.data());
  if (!detail.empty()) {
    std::fprintf(stderr, "  detail: %.*s\n", static_cast<int>(detail.size()), detail.data());
  }
  std::abort();
}

inline void check(bool ok, std::string_view what, std::string_view detail = {}) {
  if (!ok) fail(what, detail);
}

// An error message as the project promises them: one line (no line break or other control
// character, since user text is escaped), not empty, starting with `prefix`.
inline void check_message(std::string_view message, std::string_view prefix) {
  check(!message.empty(), "an error message is empty");
  for (const char c : message) {
    const auto u = static_cast<unsigned char>(c);
    check(u >= 0x20 && u != 0x7f, "an error message holds a control character", message);
  }
  check(message.starts_with(prefix), "an error message does not start as documented", message);
}

}  // namespace backoff::fuzz
