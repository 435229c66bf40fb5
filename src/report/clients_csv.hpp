// SPDX-License-Identifier: Apache-2.0
// The columns of clients.csv (one row per finished operation), listed once for everything that
// writes or reads the file: the header line the runner writes, the recorder's rows and the
// charts' reader, which finds each column by its name in the file's header.
//
//   out << report::clients_csv_header_line;                  // "strategy,id,...,status\n"
//   const std::string_view name = report::clients_csv_name(report::clients_column::latency_s);
//   static_assert(report::clients_csv_columns[5] == "latency_s");
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace backoff::report {

// The columns in file order: the operation's strategy, its id, when its first attempt was sent
// and when it finished (seconds from the start of the run), its attempts, its latency (done -
// first attempt) and how it ended ("completed", "failed", "fell_back": failed and answered by the
// strategy's fallback, or "unfinished").
inline constexpr std::array<std::string_view, 7> clients_csv_columns{
    "strategy", "id", "first_attempt_s", "done_s", "attempts", "latency_s", "status"};

// A column by its position in clients_csv_columns.
enum class clients_column : std::size_t {
  strategy,
  id,
  first_attempt_s,
  done_s,
  attempts,
  latency_s,
  status
};

constexpr std::string_view clients_csv_name(clients_column column) {
  return clients_csv_columns[static_cast<std::size_t>(column)];
}

static_assert(clients_csv_name(clients_column::strategy) == "strategy" &&
                  clients_csv_name(clients_column::status) == "status" &&
                  static_cast<std::size_t>(clients_column::status) + 1 ==
                      clients_csv_columns.size(),
              "clients_column follows clients_csv_columns, one for one");

namespace clients_csv_detail {

constexpr std::size_t header_size() {
  std::size_t size = 0;
  for (const std::string_view name : clients_csv_columns) size += name.size() + 1;  // ',' or '\n'
  return size;
}

// The header's characters and a final NUL, so that its data() is also a C string.
constexpr std::array<char, header_size() + 1> header_chars() {
  std::array<char, header_size() + 1> out{};
  std::size_t at = 0;
  for (std::size_t i = 0; i < clients_csv_columns.size(); ++i) {
    for (const char c : clients_csv_columns[i]) out[at++] = c;
    out[at++] = i + 1 < clients_csv_columns.size() ? ',' : '\n';
  }
  return out;
}

inline constexpr std::array<char, header_size() + 1> header = header_chars();

}  // namespace clients_csv_detail

// "strategy,id,first_attempt_s,done_s,attempts,latency_s,status\n"; its data() is NUL-terminated.
inline constexpr std::string_view clients_csv_header_line{clients_csv_detail::header.data(),
                                                          clients_csv_detail::header_size()};

}  // namespace backoff::report
