// SPDX-License-Identifier: Apache-2.0
// The report layer's writing rules: files land whole or not at all, never through a symbolic
// link, a write error names the file and the reason, and the manifest removes exactly what an
// earlier run wrote and this one did not (nothing else).
#include "report/output_files.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scratch.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::report::atomic_file;
using backoff::report::output_folder;
using backoff::report::spool_file;
using backoff::report::write_error;
using backoff::test::slurp;

void put(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Everything in `dir` but the manifest, sorted.
std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n != ".backoff-manifest") names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(AtomicFile, TheOldContentStaysUntilCommit) {
  const backoff::test::test_scratch dir("report");
  put(dir.dir() / "a.csv", "old\n");
  {
    atomic_file f(dir.dir() / "a.csv");
    f.stream() << "new\n";
    f.stream().flush();
    EXPECT_EQ(slurp(dir.dir() / "a.csv"), "old\n");  // a reader sees the whole old file
    f.commit();
  }
  EXPECT_EQ(slurp(dir.dir() / "a.csv"), "new\n");
  EXPECT_EQ(listing(dir.dir()), std::vector<std::string>{"a.csv"});  // no temporary left
}

TEST(AtomicFile, AbandonedWritesLeaveNothingBehind) {
  const backoff::test::test_scratch dir("report");
  put(dir.dir() / "a.csv", "old\n");
  {
    atomic_file f(dir.dir() / "a.csv");
    f.stream() << "half a fi";
  }  // an exception or an early return: no commit
  EXPECT_EQ(slurp(dir.dir() / "a.csv"), "old\n");
  EXPECT_EQ(listing(dir.dir()), std::vector<std::string>{"a.csv"});
}

TEST(AtomicFile, RefusesASymlinkAndLeavesItsTargetAlone) {
  const backoff::test::test_scratch dir("report");
  put(dir.dir() / "target", "precious\n");
  fs::create_symlink(dir.dir() / "target", dir.dir() / "summary.json");
  try {
    atomic_file f(dir.dir() / "summary.json");
    FAIL() << "a symlink was accepted";
  } catch (const write_error& e) {
    EXPECT_NE(std::string(e.what()).find("summary.json: is a symbolic link"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(slurp(dir.dir() / "target"), "precious\n");
  EXPECT_TRUE(fs::is_symlink(dir.dir() / "summary.json"));
}

TEST(AtomicFile, ADeviceIsWrittenInPlaceNeverReplaced) {
  // /dev/full: the write fails with the device's reason, and the device is still a device.
  try {
    atomic_file f("/dev/full");
    f.stream() << "x";
    f.commit();
    FAIL() << "a write to /dev/full succeeded";
  } catch (const write_error& e) {
    EXPECT_EQ(std::string(e.what()), "/dev/full: No space left on device");
  }
  struct stat st {};
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// 200 KiB of numbered rows: more than the spool's buffer of 64 KiB, so they reach its file.
std::string many_rows() {
  std::string rows;
  for (int i = 0; rows.size() < 200 * 1024; ++i) rows += "row," + std::to_string(i) + "\n";
  return rows;
}

TEST(SpoolFile, GivesBackEachPieceAndNeverShowsInTheFolder) {
  const backoff::test::test_scratch dir("report");
  const std::string rows = many_rows();
  spool_file spool(dir.dir() / "clients.csv");
  EXPECT_EQ(spool.written(), 0u);
  spool.stream() << rows.substr(0, 1000);
  const std::uint64_t mark = spool.written();
  EXPECT_EQ(mark, 1000u);
  spool.stream() << rows.substr(1000);
  const std::uint64_t end = spool.written();
  EXPECT_EQ(end, rows.size());
  EXPECT_TRUE(listing(dir.dir()).empty());  // unnamed, even with rows in its file
  // The pieces in another order than written, and a piece twice.
  std::ostringstream out;
  out << "header\n";
  spool.append_to(out, mark, end);
  spool.append_to(out, 0, mark);
  spool.append_to(out, 0, mark);
  EXPECT_EQ(out.str(),
            "header\n" + rows.substr(1000) + rows.substr(0, 1000) + rows.substr(0, 1000));
  // More after an append goes after what was written, not over it.
  spool.stream() << "last\n";
  std::ostringstream all;
  spool.append_to(all, 0, spool.written());
  EXPECT_EQ(all.str(), rows + "last\n");
  // Past what was written: an error naming the file (never a silently short file).
  std::ostringstream past;
  EXPECT_THROW(spool.append_to(past, 0, rows.size() + 100), write_error);
  EXPECT_TRUE(listing(dir.dir()).empty());
}

// In a child process (the limit is the process's): with a file size limit of 64 KiB, the spool's
// writes fail with EFBIG. Exits 0 when append_to says so, naming the file the rows are for.
[[noreturn]] void spool_past_a_size_limit(const fs::path& dir, const std::string& rows) {
  std::signal(SIGXFSZ, SIG_IGN);
  const rlimit small{64 * 1024, 64 * 1024};
  ::setrlimit(RLIMIT_FSIZE, &small);
  spool_file spool(dir / "clients.csv");
  spool.stream() << rows;
  std::ostringstream out;
  try {
    spool.append_to(out, 0, rows.size());
  } catch (const write_error& e) {
    std::exit(std::string(e.what()) == (dir / "clients.csv").string() + ": File too large" ? 0 : 2);
  }
  std::exit(1);
}

TEST(SpoolFile, AFailedWriteNamesTheFileItIsFor) {
  const backoff::test::test_scratch dir("report");
  const std::string rows = many_rows();
  EXPECT_EXIT(spool_past_a_size_limit(dir.dir(), rows), ::testing::ExitedWithCode(0), "");
}

TEST(OutputFolder, ANameIsOneComponent) {
  const backoff::test::test_scratch dir("report");
  output_folder out(dir.dir() / "o");
  for (const std::string bad : {"../x", "a/b", "..", ".", "", "a\nb"}) {
    EXPECT_THROW(out.write(bad, "x"), write_error) << bad;
  }
  EXPECT_FALSE(fs::exists(dir.dir() / "x"));
}

TEST(OutputFolder, ASymlinkedFolderIsRefused) {
  const backoff::test::test_scratch dir("report");
  fs::create_directory(dir.dir() / "real");
  fs::create_directory_symlink(dir.dir() / "real", dir.dir() / "link");
  EXPECT_THROW(output_folder(dir.dir() / "link"), write_error);
}

TEST(OutputFolder, AManifestRemovesOnlyWhatAnEarlierRunWroteAndThisOneDidNot) {
  const backoff::test::test_scratch dir("report");
  const fs::path o = dir.dir() / "o";
  {
    output_folder first(o);
    first.write("clients.csv", "1");
    first.write("report.html", "1");
    first.write("summary.json", "1");
    first.finish();
  }
  put(o / "notes.txt", "mine\n");  // the user's: never listed, never touched
  {
    output_folder second(o);
    second.write("sweep.csv", "2");
    second.write("summary.json", "2");
    second.finish();
  }
  EXPECT_EQ(listing(o), (std::vector<std::string>{"notes.txt", "summary.json", "sweep.csv"}));
  EXPECT_EQ(slurp(o / "summary.json"), "2");
}

TEST(OutputFolder, AnEarlierSummaryGoesBeforeTheFirstNewFileLands) {
  const backoff::test::test_scratch dir("report");
  const fs::path o = dir.dir() / "o";
  {
    output_folder first(o);
    first.write("clients.csv", "1");
    first.write("summary.json", "1");
    first.finish();
  }
  output_folder second(o);
  second.write("clients.csv", "2");
  // Killed here: no summary.json says "this run did not end", rather than the old one vouching
  // for the new clients.csv.
  EXPECT_FALSE(fs::exists(o / "summary.json"));
}

TEST(OutputFolder, AddModeKeepsTheRunsNamesAndAddsItsOwn) {
  const backoff::test::test_scratch dir("report");
  const fs::path o = dir.dir() / "o";
  {
    output_folder run(o);
    run.write("summary.json", "1");
    run.finish();
  }
  {
    output_folder charts(o, output_folder::manifest::add);
    charts.write("report.html", "1");
    charts.finish();
  }
  {
    output_folder again(o);  // a run without charts: report.html goes
    again.write("summary.json", "2");
    again.finish();
  }
  EXPECT_EQ(listing(o), std::vector<std::string>{"summary.json"});
}

TEST(OutputFolder, AStaleSubfolderIsEmptiedOfOurFilesAndRemovedOnlyWhenEmpty) {
  const backoff::test::test_scratch dir("report");
  const fs::path o = dir.dir() / "o";
  {
    output_folder top(o);
    for (const std::string name : {"a", "b"}) {
      output_folder sub(top.subfolder(name));
      sub.write("summary.json", name);
      sub.finish();
    }
    top.finish();
  }
  put(o / "b" / "keep.txt", "mine\n");
  {
    output_folder top(o);
    top.write("summary.json", "single");  // one scenario now, straight into o
    top.finish();
  }
  EXPECT_EQ(listing(o), (std::vector<std::string>{"b", "summary.json"}));
  EXPECT_EQ(listing(o / "b"), std::vector<std::string>{"keep.txt"});
}

TEST(OutputFolder, AHostileManifestCannotReachOutsideTheFolder) {
  const backoff::test::test_scratch dir("report");
  const fs::path o = dir.dir() / "o";
  fs::create_directories(o);
  put(dir.dir() / "victim", "precious\n");
  put(o / ".backoff-manifest", "../victim\n/etc/passwd\n..\n");
  output_folder run(o);
  run.write("summary.json", "1");
  run.finish();
  EXPECT_EQ(slurp(dir.dir() / "victim"), "precious\n");
}

TEST(OutputFolder, ShardFoldersKeepNoManifestAndRemoveNothing) {
  const backoff::test::test_scratch dir("report");
  const fs::path o = dir.dir() / "shards";
  {
    output_folder a(o, output_folder::manifest::none);
    a.write("shard-1-of-2.json", "1");
    a.finish();
  }
  {
    output_folder b(o, output_folder::manifest::none);
    b.write("shard-2-of-2.json", "2");
    b.finish();
  }
  EXPECT_EQ(listing(o), (std::vector<std::string>{"shard-1-of-2.json", "shard-2-of-2.json"}));
  EXPECT_FALSE(fs::exists(o / ".backoff-manifest"));
}

}  // namespace
