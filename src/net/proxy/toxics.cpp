// SPDX-License-Identifier: Apache-2.0
#include "toxics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <set>
#include <string>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"

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
    return faults::parse_byte_size(arg.value);
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
    bytes = faults::parse_byte_size(text);
  } catch (const parse_error& e) {
    fail(spec, arg.key + ": " + e.what());
  }
  if (bytes == 0) fail(spec, arg.key + " must be more than 0/s");
  return static_cast<double>(bytes);
}

// Bit i: toxic_kind i.
constexpr std::string_view kind_names[] = {"latency", "bandwidth",  "slicer",
                                           "timeout", "reset_peer", "limit_data"};
static_assert(std::size(kind_names) == toxic_kind_count);

constexpr variant_set only(toxic_kind kind) {
  return variant_bit(kind);
}

// Toxics keep their spec as given: no canonical text, so no writers.
constexpr spec_key<toxic> toxic_keys[] = {
    {"latency", only(toxic_kind::latency), "a duration", "0s", "each chunk waits this long first",
     [](toxic& t, const spec_value& v) { t.latency = v.time(); }, nullptr},
    {"jitter", only(toxic_kind::latency), "a duration, at most `latency`", "0s",
     "plus or minus a uniform draw up to this",
     [](toxic& t, const spec_value& v) { t.jitter = v.time(); }, nullptr},
    {"rate", only(toxic_kind::bandwidth), "a size per second (`64KiB/s`)", "required",
     "at most this many bytes a second",
     [](toxic& t, const spec_value& v) { t.bytes_per_s = rate_argument(v.spec, v.arg); }, nullptr},
    {"average_size", only(toxic_kind::slicer), "a size, at least 1", "required",
     "the average size of the pieces a chunk is cut into",
     [](toxic& t, const spec_value& v) { t.average_size = size_argument(v.spec, v.arg); }, nullptr},
    {"size_variation", only(toxic_kind::slicer), "a size below `average_size`", "0",
     "pieces are average_size plus or minus up to this",
     [](toxic& t, const spec_value& v) { t.size_variation = size_argument(v.spec, v.arg); },
     nullptr},
    {"delay", only(toxic_kind::slicer), "a duration", "0s", "the wait between pieces",
     [](toxic& t, const spec_value& v) { t.delay = v.time(); }, nullptr},
    {"timeout", only(toxic_kind::timeout) | only(toxic_kind::reset_peer), "a duration", "0s",
     "how long after it opened the connection is closed (timeout; 0: never) or reset (reset_peer; "
     "0: at once)",
     [](toxic& t, const spec_value& v) { t.timeout = v.time(); }, nullptr},
    {"bytes", only(toxic_kind::limit_data), "a size", "required",
     "the connection is closed once the stream carried this many bytes",
     [](toxic& t, const spec_value& v) { t.bytes = size_argument(v.spec, v.arg); }, nullptr},
    {"toxicity", all_variants, "a percentage (`10%`) or a fraction (`0.1`)", "100%",
     "the share of connections it applies to, drawn once per connection",
     [](toxic& t, const spec_value& v) { t.toxicity = v.fraction(); }, nullptr},
    {"stream", all_variants, "`downstream` or `upstream`", "`downstream`",
     "the response bytes toward the client, or the request bytes toward the server",
     [](toxic& t, const spec_value& v) {
       if (v.text() == "downstream") {
         t.stream = toxic_stream::downstream;
       } else if (v.text() == "upstream") {
         t.stream = toxic_stream::upstream;
       } else {
         fail(v.spec,
              "stream: expected downstream or upstream, got " + quote_for_message(v.text()));
       }
     },
     nullptr},
};

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
  const auto i = static_cast<std::size_t>(kind);
  return i < toxic_kind_count ? toxics_detail::kind_names[i] : "unknown";
}

toxic parse_toxic(std::string_view spec) {
  using toxics_detail::fail;
  using toxics_detail::kind_names;
  using toxics_detail::toxic_keys;
  const spec_call call = parse_spec_call(spec, toxics_detail::what);
  toxic t;
  t.spec = std::string(spec);
  const auto* kind = std::find(std::begin(kind_names), std::end(kind_names), call.name);
  if (kind == std::end(kind_names)) {
    fail(spec, "unknown toxic " + quote_for_message(call.name) +
                   " (known: " + join_names(kind_names) + ")" + name_hint(call.name, kind_names));
  }
  t.kind = static_cast<toxic_kind>(kind - std::begin(kind_names));
  const variant_set in_effect = variant_bit(t.kind);
  std::set<std::string, std::less<>> given;
  for (const spec_argument& arg : call.arguments) {
    const spec_key<toxic>* key = find_spec_key(toxic_keys, arg.key);
    if (key == nullptr || !key_applies(*key, in_effect)) {
      fail(spec, "unknown parameter " + quote_for_message(arg.key) + " for " + call.name +
                     " (known: " + spec_key_list(toxic_keys, in_effect) + ")" +
                     spec_key_hint(arg.key, toxic_keys, in_effect));
    }
    key->read(t, spec_value{spec, toxics_detail::what, arg});
    given.insert(arg.key);
  }
  switch (t.kind) {
    case toxic_kind::latency:
      if (t.jitter > t.latency) {
        fail(spec, "jitter " + format_duration(t.jitter) + " is more than the latency " +
                       format_duration(t.latency) + " (a delay cannot be negative)");
      }
      break;
    case toxic_kind::bandwidth:
      if (!given.contains("rate")) fail(spec, "bandwidth needs rate= (e.g. rate=64KiB/s)");
      break;
    case toxic_kind::slicer:
      if (!given.contains("average_size"))
        fail(spec, "slicer needs average_size= (e.g. average_size=64)");
      if (t.average_size == 0) fail(spec, "average_size must be at least 1");
      if (t.size_variation >= t.average_size) {
        fail(spec, "size_variation must be less than average_size");
      }
      break;
    case toxic_kind::limit_data:
      if (!given.contains("bytes")) fail(spec, "limit_data needs bytes= (e.g. bytes=1KiB)");
      break;
    case toxic_kind::timeout:
    case toxic_kind::reset_peer:
      break;
  }
  return t;
}

std::string toxic_keys_markdown() {
  return key_table_markdown(toxics_detail::toxic_keys,
                            spec_variants{toxics_detail::kind_names, {}});
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
