// SPDX-License-Identifier: Apache-2.0
// Runs the built `backoff` executable as a user would and captures what it prints, so that CLI
// tests assert on exit statuses, stdout and stderr. The path comes from the build
// (BACKOFF_CLI_PATH).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "scratch.hpp"

namespace backoff::test {

struct cli_result {
  int status = -1;
  std::string out;
  std::string err;

  // Lines of stderr, without the final newline's empty line.
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

// Runs a shell command line (its words already quoted with shell_quote) with stdin from
// /dev/null, and captures its exit status, stdout and stderr.
inline cli_result run_captured(const std::string& command) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path dir =
      fs::temp_directory_path() /
      ("backoff-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(dir);
  const std::string redirected = command + " </dev/null >" + shell_quote((dir / "out").string()) +
                                 " 2>" + shell_quote((dir / "err").string());
  const int raw = std::system(redirected.c_str());
  cli_result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

// Runs `backoff ARGS...` with stdin from /dev/null.
inline cli_result run_cli(const std::vector<std::string>& args) {
  std::string command = shell_quote(BACKOFF_CLI_PATH);
  for (const auto& a : args) command += " " + shell_quote(a);
  return run_captured(command);
}

}  // namespace backoff::test
