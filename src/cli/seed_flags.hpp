// SPDX-License-Identifier: Apache-2.0
// Seed 004's Go programs take flags with one dash and camelCase (`./server -baseDelay 100ms`,
// `./client -exponential-backoff -clients 1000`). For `backoff serve` and `backoff load` these are
// rewritten to our spelling (`--base-delay`, `--exponential-backoff`) before CLI11 parses them, so
// the seed's walkthrough works unchanged. Single letters (-q, -v, -h) and negative numbers stay.
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace backoff::cli {

inline std::string seed_flag_to_ours(std::string_view arg) {
  if (arg.size() < 3 || arg[0] != '-' || arg[1] == '-' ||
      !std::isalpha(static_cast<unsigned char>(arg[1]))) {
    return std::string(arg);
  }
  std::string out = "--";
  for (std::size_t i = 1; i < arg.size(); ++i) {
    const char c = arg[i];
    if (c == '=') {  // -flag=value: the value stays as it is
      out.append(arg.substr(i));
      break;
    }
    if (std::isupper(static_cast<unsigned char>(c))) {
      out += '-';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

// argv with the seed's flags rewritten when the command is serve or load; otherwise unchanged.
// Only words that become one of the command's own flags are rewritten (`is_flag(command, name)`),
// so that a mistyped flag is reported as the user wrote it, not as a flag nobody typed.
template <typename IsFlag>
std::vector<std::string> with_seed_flags(int argc, char** argv, const IsFlag& is_flag) {
  std::vector<std::string> args(argv, argv + argc);
  if (argc < 2) return args;
  const std::string_view sub = argv[1];
  if (sub != "serve" && sub != "load") return args;
  for (std::size_t i = 2; i < args.size(); ++i) {
    std::string ours = seed_flag_to_ours(args[i]);
    if (ours == args[i]) continue;
    const std::string name = ours.substr(0, ours.find('='));
    if (is_flag(sub, name)) args[i] = std::move(ours);
  }
  return args;
}

}  // namespace backoff::cli
