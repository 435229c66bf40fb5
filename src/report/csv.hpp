// SPDX-License-Identifier: Apache-2.0
// The one CSV writer (and its reader) of backoff (clients.csv, timeseries.csv, sweep.csv, `backoff
// delays
// --format csv`): RFC 4180 quoting, so a name holding a comma, a quote or a line break stays one
// field. Lines end in LF (RFC 4180 says CRLF; every CSV reader we target, gnuplot, pandas, R and
// spreadsheets, reads LF, and the files have always used it).
//
//   std::string row;
//   report::csv_append(row, name);  row += ',';  fmt::format_to(..., "{}", value);  row += '\n';
#pragma once

#include <istream>
#include <string>
#include <string_view>
#include <vector>

namespace backoff::report {

// Appends `text` as one field: as is when it holds no comma, quote, CR or LF; otherwise in double
// quotes with each quote doubled.
inline void csv_append(std::string& out, std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
    out += text;
    return;
  }
  out += '"';
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

inline std::string csv_field(std::string_view text) {
  std::string out;
  csv_append(out, text);
  return out;
}

// Reads one record as csv_append writes them (a quoted field may hold commas, doubled quotes and
// line breaks) into `fields`; false at the end of the input. The charts read clients.csv with it.
inline bool csv_read_record(std::istream& in, std::vector<std::string>& fields) {
  fields.clear();
  std::string field;
  bool quoted = false, any = false;
  for (int c; (c = in.get()) != std::char_traits<char>::eof();) {
    any = true;
    const char ch = static_cast<char>(c);
    if (quoted) {
      if (ch != '"') {
        field += ch;
      } else if (in.peek() == '"') {
        field += '"';
        in.get();
      } else {
        quoted = false;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (ch == '\n') {
      fields.push_back(std::move(field));
      return true;
    } else if (ch != '\r') {
      field += ch;
    }
  }
  if (!any) return false;
  fields.push_back(std::move(field));  // the last record without a final line break
  return true;
}

}  // namespace backoff::report
