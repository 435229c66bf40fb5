// SPDX-License-Identifier: Apache-2.0
#include "gnuplot.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "output_files.hpp"

extern char** environ;

namespace backoff::report {
namespace fs = std::filesystem;

scratch_dir::scratch_dir(const fs::path& parent) {
  std::string pattern = (parent / ".backoff-plot-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw plot_error("cannot create a temporary folder in " + parent.string() + ": " +
                     std::strerror(errno));
  }
  path_ = pattern;
}

scratch_dir::~scratch_dir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void run_gnuplot(const plot_options& options, const fs::path& dir, const std::string& script) {
  const fs::path log = dir / "gnuplot.log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  // A program given as a path keeps its meaning in the scratch folder.
  std::string program = options.gnuplot;
  if (program.find('/') != std::string::npos) program = fs::absolute(program).string();
  std::string flag = "-d";
  std::string script_arg = script;
  std::vector<char*> argv{program.data(), flag.data(), script_arg.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    if (rc == ENOENT) {
      throw plot_error("cannot draw charts: '" + options.gnuplot +
                       "' not found (install gnuplot, e.g. apt-get install gnuplot-nox)");
    }
    throw plot_error("cannot run '" + options.gnuplot + "': " + std::strerror(rc));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw plot_error("waiting for gnuplot: " + std::string(std::strerror(errno)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  // The first line that says what went wrong, so the message stays one line.
  std::string first;
  std::istringstream text(read_whole_file(log));
  for (std::string line; std::getline(text, line);) {
    if (line.find_first_not_of(" ^\t") == std::string::npos) continue;
    if (first.empty()) first = line;
    if (line.find("rror") != std::string::npos) {
      first = line;
      break;
    }
  }
  const std::string how = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                            : fmt::format("signal {}", WTERMSIG(status));
  // gnuplot exits 127 through the shell-less spawn only when exec itself failed.
  throw plot_error(fmt::format("gnuplot failed ({}){}{}", how, first.empty() ? "" : ": ", first));
}

}  // namespace backoff::report
