// SPDX-License-Identifier: Apache-2.0
// The shorthand flags of serve and proxy (faults.hpp: --errors, --latency, --partial-outage,
// --outage, --slow-body), each written as the fault spec it stands for and read by parse_fault.
#include <string>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "faults.hpp"

namespace backoff::faults {

fault parse_errors_flag(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view rate = text.substr(0, colon);
  const std::string_view status =
      colon == text.npos ? std::string_view("503") : text.substr(colon + 1);
  const std::string spec =
      "errors(rate=" + std::string(rate) + ", status=" + std::string(status) + ")";
  try {
    return parse_fault(spec);
  } catch (const parse_error& e) {
    throw parse_error(quote_for_message(text) + ": expected RATE[:STATUS] such as 5%:503 (" +
                      e.what() + ")");
  }
}

fault parse_latency_flag(std::string_view text) {
  // A bare duration is a fixed latency; otherwise DIST(ARGS).
  try {
    const duration d = parse_duration(text);
    return parse_fault("latency(delay=" + format_duration(d) + ")");
  } catch (const parse_error&) {
  }
  const auto open = text.find('(');
  if (open == text.npos || !text.ends_with(")")) {
    throw parse_error(
        quote_for_message(text) +
        ": expected a duration (100ms) or a distribution such as exponential(mean=50ms)");
  }
  const std::string_view name = text.substr(0, open);
  const std::string_view args = text.substr(open + 1, text.size() - open - 2);
  const bool blank = args.find_first_not_of(" \t") == args.npos;
  return parse_fault("latency(distribution=" + std::string(name) + (blank ? "" : ", ") +
                     std::string(args) + ")");
}

fault parse_partial_flag(std::string_view text) {
  return parse_fault("partial(" + std::string(text) + ")");
}

scheduled_fault parse_outage_flag(std::string_view text) {
  const auto bad = [&](const std::string& why) -> scheduled_fault {
    throw parse_error(quote_for_message(text) + ": " + why +
                      " (expected START+LENGTH[:STATUS|reset|hang|pause], such as 10s+5s:503)");
  };
  const auto plus = text.find('+');
  if (plus == text.npos) return bad("no '+'");
  const auto colon = text.find(':', plus);
  scheduled_fault out;
  try {
    out.when.start = parse_duration(text.substr(0, plus));
    const duration length =
        parse_duration(text.substr(plus + 1, colon == text.npos ? text.npos : colon - plus - 1));
    if (length.count() == 0) return bad("the length is 0");
    out.when.end = saturating_add(out.when.start, length);
  } catch (const parse_error& e) {
    return bad(e.what());
  }
  std::string spec = "outage()";
  if (colon != text.npos) {
    const std::string_view what = text.substr(colon + 1);
    if (what == "reset" || what == "hang" || what == "pause") {
      spec = "outage(action=" + std::string(what) + ")";
    } else {
      spec = "outage(status=" + std::string(what) + ")";
    }
  }
  try {
    out.what = parse_fault(spec);
  } catch (const parse_error& e) {
    return bad(e.what());
  }
  return out;
}

fault parse_slow_body_flag(std::string_view text) {
  const auto at = text.find('@');
  if (at == text.npos) {
    throw parse_error(quote_for_message(text) + ": expected SIZE@SPEED such as 16KiB@4KiB/s");
  }
  return parse_fault("slow_body(size=" + std::string(text.substr(0, at)) +
                     ", speed=" + std::string(text.substr(at + 1)) + ")");
}

}  // namespace backoff::faults
