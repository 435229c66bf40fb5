// SPDX-License-Identifier: Apache-2.0
// How every output file of backoff reaches the disk: written to a temporary file in its folder
// and renamed into place, so a reader (or a run killed half-way) never sees a half-written file;
// never through a symbolic link; any failure one line naming the file and the reason.
//
//   report::output_folder out("results/tick-burst");   // creates it; refuses a symlink
//   report::atomic_file csv = out.create("clients.csv");
//   csv.stream() << "strategy,id,...\n";
//   csv.commit();                          // renamed into place (or write_error)
//   out.write("summary.json", text);       // the same, for a file written in one go
//   out.finish();                          // the manifest; files of an earlier run removed
//
// An output_folder keeps a manifest (`.backoff-manifest`: one name per line) of what it wrote.
// With manifest::replace (a run's outputs), finish() removes the files that the previous manifest
// lists and this run did not write (another scenario's clients.csv, an old report.html), so a
// folder never mixes two runs; a name the manifest does not list is never touched. A later step
// of the same run (charts) uses manifest::add, which only adds its names. Folders shared by many
// processes (sweep shards) or the user's own (`delays --plot PREFIX`) use manifest::none.
// summary.json marks a finished run: with manifest::replace, an earlier run's summary.json is
// removed before the first new file lands, and callers write it last.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace backoff::report {

// A file could not be written: what() is "FILE: REASON" (e.g. "out/summary.json: No space left
// on device").
class write_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One name inside a folder: not empty, "." or "..", without '/' or a control character. The only
// names output_folder writes, and the rule for a scenario's sub-folder under --out.
bool is_file_name(std::string_view name);

// "PATH: REASON" for errno `error`.
[[noreturn]] void throw_write_error(const std::filesystem::path& path, int error);

// Refuses (write_error) when `path` exists and is a symbolic link.
void refuse_symlink(const std::filesystem::path& path);

// A file being written: its bytes go to a hidden temporary file beside `path`, which commit()
// renames to `path`. Destroyed uncommitted (an exception, an early return), the temporary file is
// removed and `path` keeps what it had. A `path` that exists and is not a regular file (a device
// such as /dev/stdout, a FIFO) is written in place instead: it is never replaced.
class atomic_file {
 public:
  explicit atomic_file(std::filesystem::path path);
  atomic_file(atomic_file&&) noexcept;
  atomic_file& operator=(atomic_file&&) noexcept;
  ~atomic_file();

  std::ostream& stream();
  const std::filesystem::path& path() const noexcept { return path_; }
  // Flushes and closes the temporary file and renames it over `path`; write_error naming `path`
  // on any failure so far (a full disk shows here).
  void commit();

 private:
  struct impl;
  std::filesystem::path path_;
  std::unique_ptr<impl> impl_;
};

// Bytes put aside to be appended to `beside` (say clients.csv) later, when the order they must
// take there is known: rows of runs that finish out of order. They wait in an unnamed file in
// `beside`'s folder (never in memory: they may be large; never under a name a reader could see,
// nor left behind: the file goes with its descriptor however the process ends). One spool holds
// many pieces, each between two written() marks.
//
//   report::spool_file rows(folder / "clients.csv");   // write_error naming clients.csv
//   const auto from = rows.written();
//   rows.stream() << "a,1\n";
//   const auto to = rows.written();
//   rows.append_to(clients.stream(), from, to);        // write_error naming clients.csv
class spool_file {
 public:
  explicit spool_file(std::filesystem::path beside);
  spool_file(spool_file&&) noexcept;
  spool_file& operator=(spool_file&&) noexcept;
  ~spool_file();

  std::ostream& stream();
  // How many bytes were written so far: the mark of the next piece's start.
  std::uint64_t written();
  // Writes bytes [from, to) of what was written to `out`; write_error naming `beside` when a
  // write to the spool failed (a full disk shows here) or it cannot be read back.
  void append_to(std::ostream& out, std::uint64_t from, std::uint64_t to);

 private:
  struct impl;
  std::filesystem::path beside_;
  std::unique_ptr<impl> impl_;
};

// The whole of a file the report layer wrote (an SVG, gnuplot's log); "" when it cannot be read.
std::string read_whole_file(const std::filesystem::path& path);

// `content` into `path`, atomically.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

class output_folder {
 public:
  enum class manifest : std::uint8_t { none, replace, add };

  // Creates `dir` and its parents when missing; write_error when it (or a file in it this folder
  // writes) is a symbolic link, or it cannot be created.
  explicit output_folder(std::filesystem::path dir, manifest m = manifest::replace);

  const std::filesystem::path& dir() const noexcept { return dir_; }
  // `name` is one path component (write_error otherwise: it never leaves the folder).
  atomic_file create(const std::string& name);
  void write(const std::string& name, std::string_view content);
  // Creates the sub-folder `name` (for its own output_folder) and lists it here, so that a later
  // run that does not write it removes what was written there, then the folder if it is empty.
  std::filesystem::path subfolder(const std::string& name);
  // Marks `name` as written by this run without writing it (a file written by a child process
  // through a temporary name and renamed by the caller, e.g. charts).
  void adopt(const std::string& name);
  // Writes the manifest; with manifest::replace, removes what an earlier run wrote and this one
  // did not.
  void finish();

 private:
  void begin(const std::string& name);
  std::filesystem::path dir_;
  manifest manifest_;
  bool begun_ = false;
  std::vector<std::string> earlier_;  // the manifest of the run before, read once
  std::set<std::string> written_;
};

}  // namespace backoff::report
