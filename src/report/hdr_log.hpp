// SPDX-License-Identifier: Apache-2.0
// Latency histograms that other tools read: hdr_histogram (hdr_histogram.hpp) at a precision of
// whole significant digits (3 for `backoff load`: every value within 0.1 %) in HdrHistogram's V2
// compressed encoding, and its interval log (version 1.3), as
// written by wrk2 and read by HdrHistogram's HistogramLogProcessor. `backoff load
// --histogram-log FILE` writes one histogram per second; logs of several generator processes
// merge by adding their histograms (merge_logs), here or with HdrHistogram's own tools.
//
//   hdr_histogram h;                       // 3 digits, 0 .. 1 h in microseconds by default
//   h.record(1234);
//   std::string line = hdr_log_line(0.0, 1.0, h, 1e6);   // "0.000,1.000,0.001,HISTFAAA..."
//   hdr_histogram back = decode_compressed(base64_decode(...));
//
// The formats (HdrHistogram's documentation and AbstractHistogram.encodeIntoByteBuffer):
//   - bucket layout: hdr_histogram's, unit 1 (sub-bucket count 2048 for 3 digits);
//   - V2 encoding, big-endian: cookie 0x1c849313, payload length, normalizing index offset (0),
//     significant digits, lowest discernible value, highest trackable value, integer-to-double
//     ratio (1.0), then the counts up to the maximum's index, each ZigZag LEB128 (at most 9 bytes),
//     a run of n > 1 zeros written as -n;
//   - compressed: cookie 0x1c849314, the zlib stream's length, the zlib stream of the above;
//   - a log line: start (s, from the log's BaseTime), length (s), max / ratio, Base64.
// Hand-written: Debian 12 packages HdrHistogram for Java and Go only (no C or C++ library).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hdr_histogram.hpp"

namespace backoff::report {

// HdrHistogram's V2 compressed encoding of `h` (bytes, before Base64); throws
// std::invalid_argument when its precision is not a whole number of significant digits.
std::string encode_compressed(const hdr_histogram& h);
// The inverse of encode_compressed, for up to 5 significant digits; throws std::invalid_argument
// saying what is malformed.
hdr_histogram decode_compressed(std::string_view bytes);

std::string base64_encode(std::string_view bytes);
// Throws std::invalid_argument on a character outside the alphabet or a bad length.
std::string base64_decode(std::string_view text);

// One interval of a log.
struct hdr_interval {
  double start_s = 0;   // from the log's BaseTime
  double length_s = 0;  // of the interval
  hdr_histogram histogram;
};

// The header of an interval log: format version, StartTime and BaseTime (seconds since the
// epoch, with a human-readable date), a comment naming the unit, the column names.
std::string hdr_log_header(double start_epoch_s, std::string_view unit_comment);
// One line of an interval log, with the max divided by `max_ratio` (1e6: microseconds shown in
// seconds).
std::string hdr_log_line(double start_s, double length_s, const hdr_histogram& h, double max_ratio);

struct hdr_log {
  double base_epoch_s = 0;  // BaseTime (or StartTime if there is no BaseTime)
  std::vector<hdr_interval> intervals;
};
// Reads an interval log's text; throws std::invalid_argument naming the line that is wrong.
hdr_log parse_hdr_log(std::string_view text);

// All intervals of all logs added into one histogram (of the widest range among them); throws
// std::invalid_argument when their precisions differ.
hdr_histogram merge_logs(const std::vector<hdr_log>& logs);

}  // namespace backoff::report
