// The one CSV writer of backoff (clients.csv, timeseries.csv, sweep.csv, `backoff delays
// --format csv`): RFC 4180 quoting, so a name holding a comma, a quote or a line break stays one
// field. Lines end in LF (RFC 4180 says CRLF; every CSV reader we target, gnuplot, pandas, R and
// spreadsheets, reads LF, and the files have always used it).
//
//   std::string row;
//   report::csv_append(row, name);  row += ',';  fmt::format_to(..., "{}", value);  row += '\n';
#pragma once

#include <string>
#include <string_view>

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

}  // namespace backoff::report
