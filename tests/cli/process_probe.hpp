// SPDX-License-Identifier: Apache-2.0
// Runs the built `backoff` as a background process that a test can talk to while it runs: give
// it a standard input, send it a signal once its command has started, then wait for it with a
// generous limit (a hung tool is killed, with everything it started, rather than hanging the
// suite). stdout and stderr go to files, so a test can also watch stderr while the tool runs.
//
//   process_probe p({"try", "--", "sh", "-c", "echo $$ > started; sleep 30"});
//   ASSERT_TRUE(wait_for_file(dir / "started"));
//   p.signal(SIGTERM);
//   const probe_result r = p.wait();       // r.exited, r.status == 143, r.err, r.elapsed_s
//
// The tool gets a clean environment (the test process's, without any BACKOFF_* variable, plus
// `env`), default dispositions for the signals it handles, and its own process group.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"

extern char** environ;

namespace backoff::test {

struct probe_result {
  bool finished = false;  // false: it did not end within the limit and was killed
  bool exited = false;    // ended by exit() (not killed by a signal)
  int status = -1;        // the exit status, or 128 + n when killed by signal n
  std::string out;
  std::string err;
  double elapsed_s = 0;  // from start to the end of the tool
};

// The state of a process ('R', 'S', 'Z', ...), from the field after the last ')' of
// /proc/PID/stat; 0 when there is no such process.
// Spawn attributes of a child as a user's shell starts it: in a process group of its own, no
// signal blocked, and `defaults` at their default action (a test run in the background of a shell
// would otherwise pass SIGINT and SIGQUIT on ignored). Destroy with posix_spawnattr_destroy.
inline void own_group_attributes(posix_spawnattr_t& attributes,
                                 std::initializer_list<int> defaults = {SIGINT, SIGTERM, SIGHUP,
                                                                        SIGQUIT, SIGPIPE}) {
  ::posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  ::posix_spawnattr_setsigmask(&attributes, &none);
  sigset_t set;
  sigemptyset(&set);
  for (const int s : defaults) sigaddset(&set, s);
  ::posix_spawnattr_setsigdefault(&attributes, &set);
  ::posix_spawnattr_setpgroup(&attributes, 0);
  ::posix_spawnattr_setflags(
      &attributes,
      static_cast<short>(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP));
}

inline char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return 0;
  const std::string stat{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return 0;
  return stat[paren + 2];
}

// Gone: no such process, or only a zombie left (PID 1 here does not reap orphans).
inline bool process_gone(pid_t pid) {
  const char s = process_state(pid);
  return s == 0 || s == 'Z' || s == 'X';
}

// Waits until the process is gone; true if it went within `limit`.
inline bool wait_until_gone(pid_t pid, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!process_gone(pid)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// For a test's cleanup: a process that should be gone but is not is killed, so that a failing
// test leaves nothing behind.
inline void kill_if_alive(pid_t pid) {
  if (pid > 1 && !process_gone(pid)) ::kill(pid, SIGKILL);
}

// The pids written one per line into `file` by a command (`echo $! > file`); empty if none.
inline std::vector<pid_t> read_pids(const std::filesystem::path& file) {
  std::vector<pid_t> pids;
  std::ifstream in(file);
  for (long p = 0; in >> p;) pids.push_back(static_cast<pid_t>(p));
  return pids;
}

// CPU time the process has used, in clock ticks (utime + stime of /proc/PID/stat).
inline long cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // state .. cmajflt
  long utime = 0, stime = 0;
  fields >> utime >> stime;
  return utime + stime;
}

// True once the process has a handler for `sig` (the SigCgt mask of /proc/PID/status).
inline bool catches(pid_t pid, int sig) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("SigCgt:", 0) == 0) {
      const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
      return ((mask >> (sig - 1)) & 1ULL) != 0;
    }
  }
  return false;
}

// Waits until `file` holds a whole line (a command's `echo ... > file` has finished writing).
inline bool wait_for_file(const std::filesystem::path& file,
                          std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const std::string text = slurp(file);
    if (!text.empty() && text.back() == '\n') return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Waits until `file` contains `text`.
inline bool wait_for_text(const std::filesystem::path& file, const std::string& text,
                          std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (slurp(file).find(text) != std::string::npos) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

class process_probe {
 public:
  // `args`: after the path of `backoff`; `stdin_text`: none for /dev/null; `env`: NAME=value
  // entries added to the cleaned environment; `descriptor_limit`: the tool's soft RLIMIT_NOFILE
  // (`ulimit -n`), set in this process only around the spawn, so that the probe's own files are
  // not counted against it.
  explicit process_probe(const std::vector<std::string>& args,
                         const std::optional<std::string>& stdin_text = std::nullopt,
                         const std::vector<std::string>& extra_env = {},
                         std::optional<rlim_t> descriptor_limit = std::nullopt) {
    static std::atomic<int> counter{0};  // tests start probes from several threads
    dir_ = std::filesystem::temp_directory_path() /
           ("backoff-probe-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string in_path = stdin_text ? (dir_ / "in").string() : "/dev/null";
    if (stdin_text) std::ofstream(dir_ / "in", std::ios::binary) << *stdin_text;
    const std::string out_path = (dir_ / "out").string();
    const std::string err_path = (dir_ / "err").string();

    // An entry of `extra_env` replaces the inherited one of the same name.
    const auto overridden = [&](const char* entry) {
      for (const std::string& e : extra_env) {
        const auto eq = e.find('=');
        if (std::strncmp(entry, e.c_str(), eq + 1) == 0) return true;
      }
      return false;
    };
    std::vector<std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, "BACKOFF_", 8) != 0 && !overridden(*e)) env.emplace_back(*e);
    }
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<std::string> argv{BACKOFF_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> argv_p;
    for (auto& a : argv) argv_p.push_back(a.data());
    argv_p.push_back(nullptr);
    std::vector<char*> env_p;
    for (auto& e : env) env_p.push_back(e.data());
    env_p.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
    ::posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                       0644);
    ::posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                       0644);
    posix_spawnattr_t attributes;
    own_group_attributes(attributes);
    started_ = std::chrono::steady_clock::now();
    rlimit saved{};
    ::getrlimit(RLIMIT_NOFILE, &saved);
    if (descriptor_limit) {
      rlimit lowered = saved;
      lowered.rlim_cur = *descriptor_limit;
      ::setrlimit(RLIMIT_NOFILE, &lowered);
    }
    const int error =
        ::posix_spawn(&pid_, argv_p[0], &actions, &attributes, argv_p.data(), env_p.data());
    if (descriptor_limit) ::setrlimit(RLIMIT_NOFILE, &saved);
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attributes);
    if (error != 0) {
      throw std::runtime_error(std::string("cannot start backoff: ") + std::strerror(error));
    }
  }

  process_probe(const process_probe&) = delete;
  process_probe& operator=(const process_probe&) = delete;

  ~process_probe() {
    if (!reaped_) (void)wait(std::chrono::milliseconds(0));
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  pid_t pid() const { return pid_; }
  std::filesystem::path err_path() const { return dir_ / "err"; }
  std::filesystem::path out_path() const { return dir_ / "out"; }

  void signal(int sig) const {
    if (!reaped_) ::kill(pid_, sig);
  }

  // Waits for the tool to end. If it is still running after `limit`, it is killed with every
  // process it started (their groups), and `finished` is false.
  probe_result wait(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    probe_result r;
    const auto until = std::chrono::steady_clock::now() + limit;
    int raw = 0;
    for (;;) {
      const pid_t got = ::waitpid(pid_, &raw, WNOHANG);
      if (got == pid_) {
        r.finished = true;
        break;
      }
      if (got < 0 && errno != EINTR) throw std::runtime_error("waitpid failed");
      if (std::chrono::steady_clock::now() > until) {
        kill_tree(pid_);
        ::waitpid(pid_, &raw, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    reaped_ = true;
    r.elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    r.exited = WIFEXITED(raw);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    r.out = slurp(dir_ / "out");
    r.err = slurp(dir_ / "err");
    return r;
  }

 private:
  // KILL to `pid`'s descendants' process groups (the attempts run in groups of their own), then
  // to its own group.
  static void kill_tree(pid_t pid) {
    for (const pid_t child : children_of(pid)) {
      ::kill(-child, SIGKILL);
      kill_tree(child);
      ::kill(child, SIGKILL);
    }
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }

  static std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> children;
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) return children;
    while (const dirent* entry = ::readdir(proc)) {
      if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
      std::ifstream in(std::string("/proc/") + entry->d_name + "/stat");
      const std::string stat{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      const auto paren = stat.rfind(')');
      if (paren == std::string::npos) continue;
      char state = 0;
      long ppid = 0;
      if (std::sscanf(stat.c_str() + paren + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent) {
        children.push_back(static_cast<pid_t>(std::atol(entry->d_name)));
      }
    }
    ::closedir(proc);
    return children;
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace backoff::test
