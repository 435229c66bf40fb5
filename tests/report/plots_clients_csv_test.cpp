// SPDX-License-Identifier: Apache-2.0
// clients.csv's one column list (clients_csv.hpp): its header line, and the charts' reader, which
// finds each column by name, so a file whose columns moved still gives the per-operation charts,
// and a file without one of them is one error line naming the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "report/clients_csv.hpp"
#include "report/plots.hpp"
#include "report/result.hpp"

namespace {

namespace fs = std::filesystem;
namespace report = backoff::report;

struct clients_csv_dir {
  fs::path path;
  clients_csv_dir() {
    std::string pattern = (fs::temp_directory_path() / "backoff-clients-csv-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~clients_csv_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A run of two strategies whose per-operation data is only in clients.csv.
report::scenario_result clients_csv_run() {
  report::scenario_result r;
  r.scenario = "columns";
  r.model = "m";
  for (const char* name : {"first", "second"}) {
    report::strategy_summary s;
    s.name = name;
    s.operations = 3;
    s.completed = 3;
    s.attempts = 4;
    s.bucket_width = 1'000'000'000;
    s.buckets.resize(3);
    for (auto& b : s.buckets) b.attempts = 1;
    r.strategies.push_back(s);
  }
  return r;
}

void write_clients_csv(const fs::path& dir, const std::string& text) {
  std::ofstream(dir / "clients.csv", std::ios::binary) << text;
}

TEST(ClientsCsv, TheHeaderLineIsTheColumnsInOrder) {
  EXPECT_EQ(report::clients_csv_header_line,
            "strategy,id,first_attempt_s,done_s,attempts,latency_s,status\n");
  EXPECT_EQ(std::strlen(report::clients_csv_header_line.data()),
            report::clients_csv_header_line.size());
  EXPECT_EQ(report::clients_csv_name(report::clients_column::latency_s), "latency_s");
}

TEST(ClientsCsv, ChartsReadTheColumnsByNameInAnyOrder) {
  clients_csv_dir dir;
  write_clients_csv(dir.path,
                    "status,latency_s,attempts,done_s,first_attempt_s,id,strategy\n"
                    "completed,0.5,1,0.5,0,0,first\ncompleted,1.5,2,1.5,0,1,first\n"
                    "completed,0.25,1,0.25,0,0,second\ncompleted,2.5,3,2.5,0,1,second\n");
  const std::vector<std::string> charts = report::write_plots(clients_csv_run(), dir.path);
  for (const char* chart : {"clients-latency", "clients-attempts", "latency-cdf"}) {
    EXPECT_NE(std::find(charts.begin(), charts.end(), chart), charts.end()) << chart;
  }
}

TEST(ClientsCsv, AMissingColumnIsOneLineNamingTheFile) {
  clients_csv_dir dir;
  write_clients_csv(dir.path,
                    "strategy,id,first_attempt_s,done_s,attempts,status\n"
                    "first,0,0,0.5,1,completed\n");
  try {
    (void)report::write_plots(clients_csv_run(), dir.path);
    FAIL() << "a clients.csv without latency_s was read";
  } catch (const report::plot_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find((dir.path / "clients.csv").string()), std::string::npos) << message;
    EXPECT_NE(message.find("latency_s"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

}  // namespace
