// SPDX-License-Identifier: Apache-2.0
#include "toxics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"

namespace backoff::net {
// In a namespace of their own: backoff_net may be built as one unity source.
namespace toxics_detail {
namespace {

constexpr std::string_view what = "toxic";

// "bad toxic "<spec>": <why>", the format of every spec error (spec.hpp).
[[noreturn]] void fail(std::string_view spec, const std::string& why) {
  throw parse_error("bad toxic " + quote_for_message(spec) + ": " + escape_controls(why));
}

std::uint64_t size_argument(std::string_view spec, const spec_argument& arg) {
  try {
    return net::parse_byte_size(arg.value);
  } catch (const parse_error& e) {
    fail(spec, std::string(arg.key) + ": " + e.what());
  }
}

// A rate: a size per second ("64KiB/s").
double rate_argument(std::string_view spec, const spec_argument& arg) {
  std::string_view text = arg.value;
  if (!text.ends_with("/s")) {
    fail(spec, arg.key + ": expected a size per second such as 64KiB/s, got " +
                   quote_for_message(arg.value));
  }
  text.remove_suffix(2);
  std::uint64_t bytes = 0;
  try {
    bytes = net::parse_byte_size(text);
  } catch (const parse_error& e) {
    fail(spec, arg.key + ": " + e.what());
  }
  if (bytes == 0) fail(spec, arg.key + " must be more than 0/s");
  return static_cast<double>(bytes);
}

// The parameters each kind takes, besides toxicity and stream (for the unknown-key message).
std::string_view known_keys(toxic_kind k) {
  switch (k) {
    case toxic_kind::latency:
      return "latency, jitter";
    case toxic_kind::bandwidth:
      return "rate";
    case toxic_kind::slicer:
      return "average_size, size_variation, delay";
    case toxic_kind::timeout:
    case toxic_kind::reset_peer:
      return "timeout";
    case toxic_kind::limit_data:
      return "bytes";
  }
  return "";
}

// A uniform whole number in [lo, hi], for any lo <= hi: the span is counted unsigned, since a
// jitter of duration::max() each way spans more than an int64 holds.
std::int64_t uniform_int(random_generator& rng, std::int64_t lo, std::int64_t hi) {
  const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  const double offset = uniform01(rng) * (static_cast<double>(span) + 1.0);
  const std::uint64_t step =
      offset >= 0x1p64 ? span : std::min(span, static_cast<std::uint64_t>(offset));
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + step);  // C++20: modular
}

duration seconds_for(std::size_t bytes, double bytes_per_s) {
  const double ns = std::ceil(static_cast<double>(bytes) / bytes_per_s * 1e9);
  // A rate near zero: past what nanoseconds hold is for ever (the cast would be undefined).
  if (!(ns < 9.2e18)) return duration::max();
  return duration(static_cast<duration::rep>(ns));
}

// Toxiproxy's bandwidth toxic sleeps for each chunk the time its size takes at the rate, cutting
// chunks larger than 100 ms of the rate: the same here, so that a large chunk does not go out in
// one burst after a long silence.
void limit_rate(std::vector<piece>& pieces, double bytes_per_s) {
  const auto step = static_cast<std::size_t>(std::max(1.0, std::floor(bytes_per_s / 10)));
  std::vector<piece> out;
  for (const piece& p : pieces) {
    std::size_t left = p.bytes;
    duration carried_wait = p.wait;
    do {
      const std::size_t n = std::min(left, step);
      out.push_back({n, saturating_add(carried_wait, seconds_for(n, bytes_per_s))});
      carried_wait = duration(0);
      left -= n;
    } while (left > 0);
  }
  pieces = std::move(out);
}

}  // namespace
}  // namespace toxics_detail

std::string_view toxic_kind_name(toxic_kind kind) noexcept {
  switch (kind) {
    case toxic_kind::latency:
      return "latency";
    case toxic_kind::bandwidth:
      return "bandwidth";
    case toxic_kind::slicer:
      return "slicer";
    case toxic_kind::timeout:
      return "timeout";
    case toxic_kind::reset_peer:
      return "reset_peer";
    case toxic_kind::limit_data:
      return "limit_data";
  }
  return "unknown";
}

toxic parse_toxic(std::string_view spec) {
  const spec_call call = parse_spec_call(spec, toxics_detail::what);
  toxic t;
  t.spec = std::string(spec);
  if (call.name == "latency") {
    t.kind = toxic_kind::latency;
  } else if (call.name == "bandwidth") {
    t.kind = toxic_kind::bandwidth;
  } else if (call.name == "slicer") {
    t.kind = toxic_kind::slicer;
  } else if (call.name == "timeout") {
    t.kind = toxic_kind::timeout;
  } else if (call.name == "reset_peer") {
    t.kind = toxic_kind::reset_peer;
  } else if (call.name == "limit_data") {
    t.kind = toxic_kind::limit_data;
  } else {
    toxics_detail::fail(
        spec, "unknown toxic " + quote_for_message(call.name) +
                  " (known: latency, bandwidth, slicer, timeout, reset_peer, limit_data)");
  }
  bool has_rate = false, has_average = false, has_bytes = false;
  for (const spec_argument& arg : call.arguments) {
    const std::string& k = arg.key;
    if (k == "toxicity") {
      t.toxicity = spec_fraction(spec, arg, toxics_detail::what);
    } else if (k == "stream") {
      if (arg.value == "downstream") {
        t.stream = toxic_stream::downstream;
      } else if (arg.value == "upstream") {
        t.stream = toxic_stream::upstream;
      } else {
        toxics_detail::fail(
            spec, "stream: expected downstream or upstream, got " + quote_for_message(arg.value));
      }
    } else if (t.kind == toxic_kind::latency && k == "latency") {
      t.latency = spec_duration(spec, arg, toxics_detail::what);
    } else if (t.kind == toxic_kind::latency && k == "jitter") {
      t.jitter = spec_duration(spec, arg, toxics_detail::what);
    } else if (t.kind == toxic_kind::bandwidth && k == "rate") {
      t.bytes_per_s = toxics_detail::rate_argument(spec, arg);
      has_rate = true;
    } else if (t.kind == toxic_kind::slicer && k == "average_size") {
      t.average_size = toxics_detail::size_argument(spec, arg);
      has_average = true;
    } else if (t.kind == toxic_kind::slicer && k == "size_variation") {
      t.size_variation = toxics_detail::size_argument(spec, arg);
    } else if (t.kind == toxic_kind::slicer && k == "delay") {
      t.delay = spec_duration(spec, arg, toxics_detail::what);
    } else if ((t.kind == toxic_kind::timeout || t.kind == toxic_kind::reset_peer) &&
               k == "timeout") {
      t.timeout = spec_duration(spec, arg, toxics_detail::what);
    } else if (t.kind == toxic_kind::limit_data && k == "bytes") {
      t.bytes = toxics_detail::size_argument(spec, arg);
      has_bytes = true;
    } else {
      toxics_detail::fail(spec, "unknown parameter " + quote_for_message(k) + " for " + call.name +
                                    " (known: " + std::string(toxics_detail::known_keys(t.kind)) +
                                    ", toxicity, stream)");
    }
  }
  switch (t.kind) {
    case toxic_kind::latency:
      if (t.jitter > t.latency) {
        toxics_detail::fail(spec, "jitter " + format_duration(t.jitter) +
                                      " is more than the latency " + format_duration(t.latency) +
                                      " (a delay cannot be negative)");
      }
      break;
    case toxic_kind::bandwidth:
      if (!has_rate) toxics_detail::fail(spec, "bandwidth needs rate= (e.g. rate=64KiB/s)");
      break;
    case toxic_kind::slicer:
      if (!has_average)
        toxics_detail::fail(spec, "slicer needs average_size= (e.g. average_size=64)");
      if (t.average_size == 0) toxics_detail::fail(spec, "average_size must be at least 1");
      if (t.size_variation >= t.average_size) {
        toxics_detail::fail(spec, "size_variation must be less than average_size");
      }
      break;
    case toxic_kind::limit_data:
      if (!has_bytes) toxics_detail::fail(spec, "limit_data needs bytes= (e.g. bytes=1KiB)");
      break;
    case toxic_kind::timeout:
    case toxic_kind::reset_peer:
      break;
  }
  return t;
}

std::optional<duration> toxic_pipe::timeout() const noexcept {
  for (const toxic& t : toxics_) {
    if (t.kind == toxic_kind::timeout) return t.timeout;
  }
  return std::nullopt;
}

chunk_plan toxic_pipe::plan(std::size_t bytes, random_generator& rng, double extra_bytes_per_s) {
  chunk_plan out;
  out.pieces.push_back({bytes, duration(0)});
  for (const toxic& t : toxics_) {
    switch (t.kind) {
      case toxic_kind::latency: {
        // Toxiproxy: each chunk is delayed by latency +- a uniform jitter.
        duration d = t.latency;
        if (t.jitter.count() > 0) {
          d = saturating_add(
              d, duration(toxics_detail::uniform_int(rng, -t.jitter.count(), t.jitter.count())));
        }
        if (!out.pieces.empty()) {
          out.pieces.front().wait =
              saturating_add(out.pieces.front().wait, std::max(d, duration(0)));
        }
        break;
      }
      case toxic_kind::bandwidth:
        toxics_detail::limit_rate(out.pieces, t.bytes_per_s);
        break;
      case toxic_kind::slicer: {
        // Toxiproxy: pieces of average_size +- size_variation bytes, delay between them.
        std::vector<piece> sliced;
        for (const piece& p : out.pieces) {
          std::size_t left = p.bytes;
          duration wait = p.wait;
          while (left > 0) {
            const auto avg = static_cast<std::int64_t>(t.average_size);
            const auto var = static_cast<std::int64_t>(t.size_variation);
            const std::int64_t size =
                var > 0 ? toxics_detail::uniform_int(rng, avg - var, avg + var) : avg;
            const std::size_t n =
                std::min(left, static_cast<std::size_t>(std::max<std::int64_t>(1, size)));
            sliced.push_back({n, wait});
            wait = t.delay;
            left -= n;
          }
        }
        out.pieces = std::move(sliced);
        break;
      }
      case toxic_kind::limit_data: {
        // Toxiproxy: the data passes up to the limit, then the connection closes.
        const std::uint64_t room = t.bytes > carried_ ? t.bytes - carried_ : 0;
        std::uint64_t kept = 0;
        std::vector<piece> cut;
        for (const piece& p : out.pieces) {
          if (kept >= room) break;
          const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(p.bytes, room - kept));
          cut.push_back({n, p.wait});
          kept += n;
        }
        if (kept + carried_ >= t.bytes && bytes > 0) out.close_after = true;
        out.pieces = std::move(cut);
        break;
      }
      case toxic_kind::timeout:
      case toxic_kind::reset_peer:
        break;  // whole-connection toxics: the proxy applies them (timeout(), reset_after)
    }
  }
  if (extra_bytes_per_s > 0) toxics_detail::limit_rate(out.pieces, extra_bytes_per_s);
  for (const piece& p : out.pieces) carried_ += p.bytes;
  return out;
}

connection_toxics draw_toxics(const std::vector<toxic>& all, random_generator& rng) {
  connection_toxics c;
  std::vector<toxic> down, up;
  for (const toxic& t : all) {
    // Toxiproxy's toxicity: the probability that the toxic applies to a connection.
    if (t.toxicity < 1.0 && !(uniform01(rng) < t.toxicity)) continue;
    c.applied |= 1U << static_cast<unsigned>(t.kind);
    if (t.kind == toxic_kind::reset_peer) {
      if (!c.reset_after || t.timeout < *c.reset_after) c.reset_after = t.timeout;
      continue;
    }
    (t.stream == toxic_stream::upstream ? up : down).push_back(t);
  }
  c.downstream = toxic_pipe(std::move(down));
  c.upstream = toxic_pipe(std::move(up));
  return c;
}

}  // namespace backoff::net
