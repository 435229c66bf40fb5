// SPDX-License-Identifier: Apache-2.0
// The README's command blocks, pasted in order as a reader would: every fenced block of
// README.md is classified (run here, a shell block run elsewhere, or not shell), and the lines of
// the blocks run here go through bash, one by one in README order, in a scratch folder where
// build/bin is the built tool's folder and examples/scripts the checkout's. Lines ending in '&'
// start servers, which must still run when the last line has run and stop on SIGTERM with status
// 0; each other line must exit 0, and what the README's comments promise is checked where cheap.
//
// No network: `curl` and `ssh` are stubs that print their arguments. Two lines run a minute or
// more as written; they run with a few flags appended (readme_shortened_lines). The servers listen
// on the README's ports, 8070 to 8072, which no other test uses (two runs of this test at once,
// from two build folders, collide: the second fails saying which port is in use). The suite's
// name ends in WallClock: label walltime, seconds of real time, which the sanitizer builds skip.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "loopback_http.hpp"
#include "process_probe.hpp"
#include "scratch.hpp"

extern char** environ;

namespace {

// --- The README's blocks ------------------------------------------------------------------------

struct readme_block {
  std::string language;  // after the opening ```, "" when none
  std::string text;      // the lines between the fences, each with its '\n'
  std::size_t line = 0;  // of the opening fence, from 1
};

std::vector<readme_block> readme_fenced_blocks(const std::string& markdown) {
  std::vector<readme_block> blocks;
  std::istringstream in(markdown);
  bool inside = false;
  std::size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.rfind("```", 0) != 0) {
      if (inside) blocks.back().text += line + "\n";
      continue;
    }
    if (inside) {
      inside = false;
    } else {
      blocks.push_back({line.substr(3), "", number});
      inside = true;
    }
  }
  EXPECT_FALSE(inside) << "README.md: the block at line " << blocks.back().line
                       << " has no closing fence";
  return blocks;
}

// A command line of a block: continuation lines joined, its comment apart.
struct readme_command {
  std::string command;  // as bash runs it, without the comment and the trailing '&'
  std::string comment;  // after an unquoted '#', "" when none
  bool background = false;
};

// Splits an unquoted '#' comment (a '#' that starts a word, as bash reads it) off `line`.
readme_command readme_split_comment(const std::string& line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return {line.substr(0, i), line.substr(i + 1), false};
    }
  }
  return {line, "", false};
}

std::string readme_trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// The command lines of a shell block: a line ending in '\' goes on with the next (bash drops the
// backslash and the newline), blank and comment-only lines are left out.
std::vector<readme_command> readme_commands(const std::string& block) {
  std::vector<readme_command> found;
  std::istringstream in(block);
  std::string pending;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1);
      continue;
    }
    readme_command c = readme_split_comment(pending + line);
    pending.clear();
    c.command = readme_trimmed(c.command);
    c.comment = readme_trimmed(c.comment);
    if (c.command.empty()) continue;
    if (c.command.back() == '&') {
      c.background = true;
      c.command = readme_trimmed(c.command.substr(0, c.command.size() - 1));
    }
    found.push_back(c);
  }
  EXPECT_TRUE(pending.empty()) << "a block ends in a continued line:\n" << block;
  return found;
}

// `build/bin/backoff ...`, after any NAME=value assignments.
bool readme_runs_the_tool(const std::string& command) {
  static const std::regex tool(R"(^([A-Za-z_][A-Za-z0-9_]*=\S*\s+)*build/bin/backoff(\s.*)?$)");
  return std::regex_match(command, tool);
}

enum class readme_block_kind { run_here, shell_run_elsewhere, not_shell, unclassified };

// The shell blocks run elsewhere, as the README has them:
// - `make demo` and `make test` install packages as root and build every target: CI runs
//   `make test` itself (.ci/run), and Reference.MakeDemoBuildsTheToolTheManPageAndTheCompletions
//   (tests/cli/reference_cli_test.cpp) checks that `make demo` builds the targets and the files
//   it names;
// - the install recipe builds another tree and installs into /usr/local: the tests consumer_*
//   (tests/consumer/, `ctest -R consumer`) install a build into a prefix and build a user of each
//   route against it (find_package, the shared library, pkg-config, FetchContent).
const std::vector<std::string> readme_shell_blocks_run_elsewhere = {
    R"(make demo    # installs what is missing (apt), builds the CLI, backoff-try, the man page and the
             # completions, prints the presets, runs the simulator suite with charts: open
             # results/index.html
make test    # installs, builds, runs every test (unit, property, CLI, installed-package consumer)
)",
    R"(cmake -S . -B build-lib -G Ninja -DCMAKE_BUILD_TYPE=Release -DBACKOFF_BUILD_TESTS=OFF \
    -DBACKOFF_BUILD_CLI=OFF -DBACKOFF_BUILD_BENCH=OFF -DBACKOFF_BUILD_EXAMPLES=OFF
cmake --build build-lib && cmake --install build-lib --prefix /usr/local
)",
};

// A listing of folders (the Layout section): each line that does not go on from the one above
// starts with a folder name.
bool readme_is_folder_listing(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == ' ') continue;
    const std::string word = line.substr(0, line.find(' '));
    if (word.back() != '/') return false;
  }
  return !text.empty();
}

readme_block_kind readme_classify(const readme_block& b) {
  if (b.language == "cpp" || b.language == "cmake") return readme_block_kind::not_shell;
  if (b.language.empty()) {
    return readme_is_folder_listing(b.text) ? readme_block_kind::not_shell
                                            : readme_block_kind::unclassified;
  }
  if (b.language != "sh" && b.language != "bash" && b.language != "shell") {
    return readme_block_kind::unclassified;
  }
  const auto lines = readme_commands(b.text);
  if (!lines.empty() && std::all_of(lines.begin(), lines.end(), [](const auto& c) {
        return readme_runs_the_tool(c.command);
      })) {
    return readme_block_kind::run_here;
  }
  const auto& elsewhere = readme_shell_blocks_run_elsewhere;
  return std::find(elsewhere.begin(), elsewhere.end(), b.text) != elsewhere.end()
             ? readme_block_kind::shell_run_elsewhere
             : readme_block_kind::unclassified;
}

// --- Lines that run long as written ------------------------------------------------------------

struct readme_shortened {
  const char* command;   // exactly as the README has it, without its comment
  const char* appended;  // flags the line does not have, after its own
};

// `load` runs 60 s by default; `load --experiment outage` two runs of 120 s with a 10 s pause at
// 10 s. `load` refuses a flag given twice, so none of these may be on the line already.
constexpr readme_shortened readme_shortened_lines[] = {
    {"build/bin/backoff load -clients 1000 -exponential-backoff", "--duration 2s"},
    {"build/bin/backoff load --experiment outage --out results/outage-real",
     "--duration 2s --pause-after 0.5s --pause-for 0.5s"},
};

// The command with the table's flags appended, if it names it; counts the table's rows used.
std::string readme_as_run(const std::string& command, std::set<std::string>& rows_used) {
  for (const auto& row : readme_shortened_lines) {
    if (command != row.command) continue;
    rows_used.insert(row.command);
    std::istringstream flags(row.appended);
    for (std::string flag; flags >> flag;) {
      if (flag.rfind("--", 0) != 0) continue;
      const std::string bare = flag.substr(2);
      EXPECT_FALSE(std::regex_search(command, std::regex("\\s--?" + bare + "(\\s|=|$)")))
          << "appending " << flag << " to a line that has it: " << command;
    }
    return command + " " + row.appended;
  }
  return command;
}

// --- Running the lines ---------------------------------------------------------------------------

// A line that ends in '&': bash in its own process group, stopped with that group when this
// object goes, however the test ends (SIGTERM, then SIGKILL after 5 s).
class readme_server {
 public:
  readme_server(const std::string& script, const std::filesystem::path& log) : err_(log) {
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    ::posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                       0644);
    // As in a reader's terminal, whatever dispositions the test runner passed on.
    posix_spawnattr_t attributes;
    backoff::test::own_group_attributes(attributes);
    std::string bash = "/bin/bash", c = "-c", text = script;
    char* argv[] = {bash.data(), c.data(), text.data(), nullptr};
    if (::posix_spawn(&pid_, "/bin/bash", &actions, &attributes, argv, environ) != 0) pid_ = -1;
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attributes);
  }
  readme_server(const readme_server&) = delete;
  readme_server& operator=(const readme_server&) = delete;
  ~readme_server() { (void)stop(); }

  std::string err() const { return backoff::test::slurp(err_); }
  bool running() {
    if (pid_ <= 0 || reaped_) return false;
    int raw = 0;
    if (::waitpid(pid_, &raw, WNOHANG) != pid_) return true;
    reap(raw);
    return false;
  }
  // Its exit status after SIGTERM (128 + n when a signal ended it, -1 when it had to be killed).
  int stop() {
    if (pid_ <= 0 || stopped_) return status_;
    stopped_ = true;
    if (!reaped_) {
      ::kill(-pid_, SIGTERM);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (running() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!reaped_) {
        ::kill(-pid_, SIGKILL);
        int raw = 0;
        ::waitpid(pid_, &raw, 0);
        reap(raw);
        status_ = -1;
      }
    }
    ::kill(-pid_, SIGKILL);  // anything the line started in its group
    return status_;
  }
  // True when no process of its group is left.
  bool group_gone() const { return pid_ <= 0 || (::kill(-pid_, 0) != 0 && errno == ESRCH); }

 private:
  void reap(int raw) {
    reaped_ = true;
    status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  }
  std::filesystem::path err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  bool stopped_ = false;
  int status_ = -1;
};

// What a line of the README did.
struct readme_ran {
  readme_command line;               // as the README has it
  std::string as_run;                // with the appended flags, if any
  backoff::test::cli_result result;  // foreground lines
  readme_server* server = nullptr;   // background lines
  std::string listening;             // a server's "HOST:PORT"
};

// The folder the lines run in, as a reader's checkout: build/bin the built tool's folder,
// examples/scripts the checkout's; and beside it a folder of stubs first on PATH.
struct readme_workspace {
  backoff::test::test_scratch folder{"readme", "checkout"};
  backoff::test::test_scratch tools{"readme", "stubs"};
  std::vector<std::unique_ptr<readme_server>> servers;  // stopped before the folders go

  readme_workspace() {
    namespace fs = std::filesystem;
    fs::create_directories(folder / "build");
    fs::create_directory_symlink(fs::path(BACKOFF_CLI_PATH).parent_path(), folder / "build/bin");
    fs::create_directories(folder / "examples");
    fs::create_directory_symlink(fs::path(BACKOFF_SOURCE_DIR) / "examples/scripts",
                                 folder / "examples/scripts");
    for (const char* name : {"curl", "ssh"}) {
      const fs::path stub = tools.sub("bin") / name;
      std::ofstream(stub) << "#!/bin/sh\necho \"" << name << " $*\"\n";
      fs::permissions(stub, fs::perms::owner_all, fs::perm_options::add);
    }
  }
  ~readme_workspace() {
    for (auto& s : servers) (void)s->stop();
  }
  // The bash script that runs `command` there.
  std::string script(const std::string& command) const {
    return "cd " + backoff::test::shell_quote(folder.dir().string()) +
           " || exit 99; PATH=" + backoff::test::shell_quote((tools / "bin").string()) +
           ":\"$PATH\"; " + command;
  }
};

constexpr int readme_line_limit_s = 20;

backoff::test::cli_result readme_run_foreground(const readme_workspace& w,
                                                const std::string& command) {
  // GNU timeout runs bash in a process group of its own and stops the whole group.
  return backoff::test::run_captured("timeout -k 2 " + std::to_string(readme_line_limit_s) +
                                     " bash -c " + backoff::test::shell_quote(w.script(command)));
}

// Starts a line that ends in '&' and waits until it says where it listens and the port accepts.
void readme_start_server(readme_workspace& w, readme_ran& ran) {
  const std::size_t n = w.servers.size();
  w.servers.push_back(std::make_unique<readme_server>(
      w.script("exec " + ran.as_run), w.tools / ("server-" + std::to_string(n) + ".err")));
  ran.server = w.servers.back().get();
  static const std::regex listening(R"(listening on http://([^ ,/]+:([0-9]+)))");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::smatch m;
  std::string err;
  while (std::chrono::steady_clock::now() < until && ran.server->running()) {
    err = ran.server->err();
    if (std::regex_search(err, m, listening)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(m.empty()) << ran.line.command << " did not start (is a port of the README in "
                          << "use by another program?):\n"
                          << ran.server->err();
  ran.listening = m[1];
  const int fd = backoff::test::connect_to_loopback(m[2]);
  EXPECT_GE(fd, 0) << ran.line.command << ": port " << m[2] << " does not accept";
  if (fd >= 0) ::close(fd);
}

// The lines run, in README order; stops at the first server that does not start.
std::vector<readme_ran> readme_run_lines(readme_workspace& w,
                                         const std::vector<readme_command>& lines) {
  std::vector<readme_ran> ran;
  std::set<std::string> rows_used;
  ran.reserve(lines.size());
  for (const auto& line : lines) {
    ran.push_back({line, readme_as_run(line.command, rows_used), {}, nullptr, ""});
    readme_ran& r = ran.back();
    if (line.background) {
      readme_start_server(w, r);
      if (::testing::Test::HasFatalFailure()) return ran;
      continue;
    }
    r.result = readme_run_foreground(w, r.as_run);
    const std::string timed_out =
        r.result.status == 124
            ? "\n(stopped after " + std::to_string(readme_line_limit_s) +
                  " s: a line that runs long as written belongs in readme_shortened_lines)"
            : "";
    EXPECT_EQ(r.result.status, 0) << r.as_run << timed_out << "\nstdout:\n"
                                  << r.result.out << "stderr:\n"
                                  << r.result.err;
  }
  for (const auto& row : readme_shortened_lines) {
    EXPECT_EQ(rows_used.count(row.command), 1U)
        << "readme_shortened_lines names a line the README no longer has: " << row.command;
  }
  return ran;
}

// The one line that starts with `prefix`, or nullptr (a failure: the README lost the line).
const readme_ran* readme_line(const std::vector<readme_ran>& ran, const std::string& prefix) {
  const readme_ran* found = nullptr;
  for (const auto& r : ran) {
    if (r.line.command.rfind(prefix, 0) != 0) continue;
    EXPECT_EQ(found, nullptr) << "two README lines start with " << prefix;
    found = &r;
  }
  EXPECT_NE(found, nullptr) << "no README line starts with " << prefix;
  return found;
}

// --- What the README promises ------------------------------------------------------------------

bool readme_is_png(const std::filesystem::path& file) {
  return backoff::test::slurp(file).rfind("\x89PNG\r\n", 0) == 0;
}

// The simulator's table: the cell of `column` in the row of `strategy` ("" when absent).
std::string readme_table_cell(const std::string& table, const std::string& strategy,
                              const std::string& column) {
  std::istringstream in(table);
  std::vector<std::string> header;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> cells;
    for (std::string w; words >> w;) cells.push_back(w);
    if (cells.empty()) continue;
    if (cells[0] == "strategy") header = cells;
    if (cells[0] != strategy || header.size() != cells.size()) continue;
    const auto at = std::find(header.begin(), header.end(), column);
    if (at != header.end()) return cells[static_cast<std::size_t>(at - header.begin())];
  }
  return "";
}

void readme_check_try_it(const std::vector<readme_ran>& ran) {
  if (const auto* presets = readme_line(ran, "build/bin/backoff presets --format json")) {
    const auto parsed = nlohmann::json::parse(presets->result.out, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << presets->result.out;
    EXPECT_TRUE(parsed.contains("presets") && !parsed["presets"].empty()) << presets->result.out;
  }
  // "CSV columns are run,attempt,delay_s": one row per attempt.
  if (const auto* csv = readme_line(ran, "build/bin/backoff delays --policy 'gcp-iot(max=32s)'")) {
    EXPECT_EQ(csv->result.out.rfind("run,attempt,delay_s\n", 0), 0U) << csv->result.out;
    EXPECT_EQ(std::count(csv->result.out.begin(), csv->result.out.end(), '\n'), 11)
        << csv->result.out;
  }
}

void readme_check_simulator(const std::vector<readme_ran>& ran, const readme_workspace& w) {
  // "gRPC hedging: p99 from 5 s to 1 s, for 1.1 times the calls" (att/op: calls per operation).
  if (const auto* hedging = readme_line(ran, "build/bin/backoff sim hedging-tail")) {
    const std::string& table = hedging->result.out;
    const std::string hedged_row = [&] {
      std::smatch m;
      return std::regex_search(table, m, std::regex(R"(\n(hedge-\S+) )")) ? m[1].str() : "";
    }();
    ASSERT_FALSE(hedged_row.empty()) << table;
    const auto number = [&](const std::string& row, const std::string& column) {
      const std::string cell = readme_table_cell(table, row, column);
      EXPECT_FALSE(cell.empty()) << row << " " << column << ":\n" << table;
      return cell.empty() ? -1.0 : std::stod(cell);
    };
    EXPECT_EQ(std::lround(number("no-hedging", "p99")), 5) << table;
    EXPECT_EQ(std::lround(number(hedged_row, "p99")), 1) << table;
    const double calls = number(hedged_row, "att/op") / number("no-hedging", "att/op");
    EXPECT_EQ(std::lround(calls * 10), 11) << table;
  }
  // `--out DIR` writes summary.json, timeseries.csv and clients.csv; `--plot` charts and
  // report.html.
  if (readme_line(ran, "build/bin/backoff sim tick-burst --out results/tick-burst") != nullptr) {
    for (const char* file : {"summary.json", "timeseries.csv", "clients.csv", "report.html"}) {
      EXPECT_TRUE(w.folder.has(std::string("results/tick-burst/") + file)) << file;
    }
    EXPECT_TRUE(readme_is_png(w.folder / "results/tick-burst/latency.png"));
  }
  // "smira.png, smira-log.png"
  if (readme_line(ran, "build/bin/backoff delays --policy smira") != nullptr) {
    EXPECT_TRUE(readme_is_png(w.folder / "smira.png"));
    EXPECT_TRUE(readme_is_png(w.folder / "smira-log.png"));
  }
}

void readme_check_retry_tool(const std::vector<readme_ran>& ran) {
  const auto printed = [&](const std::string& prefix, const std::string& text) {
    if (const auto* r = readme_line(ran, prefix)) {
      EXPECT_NE(r->result.out.find(text), std::string::npos) << r->as_run << ":\n" << r->result.out;
    }
  };
  printed("build/bin/backoff try ", "curl -fsS https://example.org/health\n");
  printed("build/bin/backoff forall ", "ssh web1 systemctl restart app\n");
  printed("build/bin/backoff forall ", "ssh web2 systemctl restart app\n");
  printed("build/bin/backoff forall ", "ssh web3 systemctl restart app\n");
  printed("URL=http://localhost:8080/healthz build/bin/backoff script",
          "curl --fail --silent --output /dev/null http://localhost:8080/healthz\nservice is up\n");
  // forany stops at the first host that works: one of the two, once.
  if (const auto* r = readme_line(ran, "build/bin/backoff forany ")) {
    EXPECT_TRUE(std::regex_match(
        r->result.out, std::regex(R"(curl -fsS -O https://m[12]\.example\.org/pkg\.tgz\n)")))
        << r->result.out;
  }
}

void readme_check_network(const std::vector<readme_ran>& ran, const readme_workspace& w) {
  for (const auto& r : ran) {
    if (r.server == nullptr) continue;
    // "on 127.0.0.1:8071", `--port 8072`: where it says it listens.
    std::smatch m;
    if (std::regex_search(r.line.comment, m, std::regex(R"(\b127\.0\.0\.1:[0-9]+)"))) {
      EXPECT_EQ(r.listening, m[0].str()) << r.line.command << "\n" << r.server->err();
    }
    if (std::regex_search(r.line.command, m, std::regex(R"(--port ([0-9]+))"))) {
      EXPECT_EQ(r.listening, "127.0.0.1:" + m[1].str()) << r.line.command;
    }
  }
  // The proxy forwards to the first server: a request through it is answered.
  if (const auto* proxy = readme_line(ran, "build/bin/backoff proxy ")) {
    const std::string port = proxy->listening.substr(proxy->listening.rfind(':') + 1);
    const std::string answer = backoff::test::http_exchange(
        port, "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0U) << answer << "\n" << proxy->server->err();
  }
  // smira's client against the first server: requests were answered.
  if (const auto* load = readme_line(ran, "build/bin/backoff load -clients")) {
    EXPECT_NE(load->result.out.find("OK: "), std::string::npos) << load->result.out;
    EXPECT_EQ(load->result.out.find("OK: 0.00 "), std::string::npos) << load->result.out;
  }
  // The experiment writes both strategies' summary and time series.
  if (readme_line(ran, "build/bin/backoff load --experiment outage") != nullptr) {
    const auto summary =
        nlohmann::json::parse(w.folder.read("results/outage-real/summary.json"), nullptr, false);
    ASSERT_FALSE(summary.is_discarded());
    std::vector<std::string> names;
    for (const auto& s : summary["strategies"]) names.push_back(s["name"].get<std::string>());
    EXPECT_EQ(names, (std::vector<std::string>{"fixed", "exponential"}));
    EXPECT_EQ(w.folder.read("results/outage-real/timeseries.csv").rfind("strategy,t_s,", 0), 0U);
  }
}

// Every server still runs after the last line, stops on SIGTERM with status 0, and leaves no
// process of its group behind.
void readme_stop_servers(const std::vector<readme_ran>& ran) {
  for (const auto& r : ran) {
    if (r.server == nullptr) continue;
    EXPECT_TRUE(r.server->running()) << r.line.command << " ended early:\n" << r.server->err();
    EXPECT_EQ(r.server->stop(), 0) << r.line.command << ":\n" << r.server->err();
    EXPECT_TRUE(r.server->group_gone()) << r.line.command;
  }
}

std::string readme_text() {
  std::string path = BACKOFF_SOURCE_DIR;
  path += "/README.md";
  return backoff::test::slurp(path);
}

// Every block of the README is classified, and the shell blocks not run here are exactly the
// ones named (readme_shell_blocks_run_elsewhere): a new shell block cannot slip by untested.
TEST(ReadmeBlocks, EveryBlockIsRunHereRunElsewhereOrNotShell) {
  const auto blocks = readme_fenced_blocks(readme_text());
  ASSERT_FALSE(blocks.empty());
  std::vector<std::string> elsewhere;
  std::size_t run_here = 0;
  for (const auto& b : blocks) {
    switch (readme_classify(b)) {
      case readme_block_kind::run_here:
        ++run_here;
        break;
      case readme_block_kind::shell_run_elsewhere:
        elsewhere.push_back(b.text);
        break;
      case readme_block_kind::not_shell:
        break;
      case readme_block_kind::unclassified:
        ADD_FAILURE() << "README.md:" << b.line << ": a block (```" << b.language
                      << ") that is neither lines of build/bin/backoff, nor one of "
                         "readme_shell_blocks_run_elsewhere, nor C++, CMake or the folder "
                         "listing: run it here or say which test runs it\n"
                      << b.text;
    }
  }
  EXPECT_EQ(elsewhere, readme_shell_blocks_run_elsewhere);
  EXPECT_GT(run_here, 0U);
}

TEST(ReadmeBlocks, TheSplitterReadsCommentsQuotesContinuationsAndBackground) {
  const auto c = readme_commands(
      "build/bin/backoff a 'x # y' \\\n    --b 1   # the comment\n\n# alone\n"
      "build/bin/backoff serve &   # on 127.0.0.1:1\nURL=u#v build/bin/backoff script s\n");
  ASSERT_EQ(c.size(), 3U);
  EXPECT_EQ(c[0].command, "build/bin/backoff a 'x # y'     --b 1");
  EXPECT_EQ(c[0].comment, "the comment");
  EXPECT_FALSE(c[0].background);
  EXPECT_EQ(c[1].command, "build/bin/backoff serve");
  EXPECT_TRUE(c[1].background);
  EXPECT_EQ(c[1].comment, "on 127.0.0.1:1");
  EXPECT_EQ(c[2].command, "URL=u#v build/bin/backoff script s");
  EXPECT_TRUE(readme_runs_the_tool(c[2].command));
  EXPECT_FALSE(readme_runs_the_tool("make demo"));
  EXPECT_FALSE(readme_runs_the_tool("build/bin/backoffice"));
}

// The blocks run here, their lines in README order, as pasted (two with flags appended).
TEST(ReadmeBlocksWallClock, TheCommandBlocksWorkPastedInOrder) {
  std::vector<readme_command> lines;
  for (const auto& b : readme_fenced_blocks(readme_text())) {
    if (readme_classify(b) != readme_block_kind::run_here) continue;
    const auto block_lines = readme_commands(b.text);
    lines.insert(lines.end(), block_lines.begin(), block_lines.end());
  }
  ASSERT_FALSE(lines.empty());
  readme_workspace w;
  const auto ran = readme_run_lines(w, lines);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  readme_check_try_it(ran);
  readme_check_simulator(ran, w);
  readme_check_retry_tool(ran);
  readme_check_network(ran, w);
  readme_stop_servers(ran);
}

}  // namespace
