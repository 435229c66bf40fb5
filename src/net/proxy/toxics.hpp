// SPDX-License-Identifier: Apache-2.0
// Toxics: what `backoff proxy` does to the bytes it relays, besides the HTTP-level faults of
// faults.hpp. The kinds and their parameters are Toxiproxy's (Shopify/toxiproxy, README,
// "Toxics"); this file takes their rules, not their code. Parsing and planning are pure: given a
// chunk's size and a generator, plan() says which pieces to send and how long to wait before
// each, so tests check every rule without a socket (tests/net/proxy_test.cpp, Toxics.*).
//
//   toxic t = parse_toxic("latency(latency=100ms, jitter=10ms, toxicity=50%)");
//   random_generator rng{derive_seed(seed, connection_number)};
//   connection_toxics c = draw_toxics(all, rng);              // once per client connection
//   chunk_plan p = c.downstream.plan(bytes.size(), rng);      // for each write toward the client
//   for (const piece& x : p.pieces) { wait x.wait; send x.bytes of it; }
//   if (p.close_after) close the connection;
//
// Spec grammar: the library's call syntax (spec.hpp), one kind per name:
//   latency(latency=100ms, jitter=10ms)   each chunk waits latency +- uniform jitter first
//   bandwidth(rate=64KiB/s)                at most rate bytes a second
//   slicer(average_size=64, size_variation=32, delay=1ms)
//                                          chunks cut into pieces of average_size +- variation
//                                          bytes, with delay between pieces
//   timeout(timeout=2s)                    no data passes; the connection is closed timeout after
//                                          it opened (0: never; held until the client leaves)
//   reset_peer(timeout=0s)                 the client connection is reset (RST) timeout after it
//                                          opened (0: at once)
//   limit_data(bytes=1KiB)                 the connection is closed once the stream carried this
//                                          many bytes (the last chunk cut to fit)
// Every kind takes toxicity= (the share of connections it applies to, default 100%, drawn once
// per connection as Toxiproxy does) and stream=downstream|upstream (default downstream: the
// response bytes toward the client; upstream: the request bytes toward the server). Sizes are
// bytes with an optional B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000); a rate
// is a size followed by "/s".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/random.hpp"
#include "faults/faults.hpp"  // parse_byte_size

namespace backoff::net {

enum class toxic_kind : unsigned { latency, bandwidth, slicer, timeout, reset_peer, limit_data };
inline constexpr unsigned toxic_kind_count = 6;

enum class toxic_stream { downstream, upstream };

struct toxic {
  toxic_kind kind = toxic_kind::latency;
  toxic_stream stream = toxic_stream::downstream;
  double toxicity = 1.0;             // the share of connections it applies to, in [0, 1]
  duration latency{0};               // latency
  duration jitter{0};                // latency: at most latency (a delay is never negative)
  double bytes_per_s = 0;            // bandwidth: > 0
  std::uint64_t average_size = 0;    // slicer: >= 1
  std::uint64_t size_variation = 0;  // slicer: < average_size
  duration delay{0};                 // slicer: between pieces
  duration timeout{0};               // timeout, reset_peer
  std::uint64_t bytes = 0;           // limit_data
  std::string spec;                  // as given, for messages
};

// "latency", "bandwidth", ...: the names of specs and of the metrics' labels.
std::string_view toxic_kind_name(toxic_kind kind) noexcept;

// One toxic from its spec; throws parse_error with one line quoting the spec and naming the bad
// part (an unknown kind or parameter, a bad value, a jitter above the latency...).
toxic parse_toxic(std::string_view spec);

// The markdown table of the toxic keys, as docs/NETWORK.md carries it (spec_keys.hpp).
std::string toxic_keys_markdown();

// Bytes to send, after waiting `wait`.
struct piece {
  std::size_t bytes = 0;
  duration wait{0};
};

struct chunk_plan {
  std::vector<piece> pieces;  // in order; their bytes add up to the chunk, or less with close_after
  bool close_after = false;   // limit_data reached: close the connection after these pieces
};

// The toxics of one stream of one connection (those its toxicity draw kept), applied in the order
// they were given, as Toxiproxy chains them. limit_data counts across the chunks of the stream.
class toxic_pipe {
 public:
  toxic_pipe() = default;
  explicit toxic_pipe(std::vector<toxic> active) : toxics_(std::move(active)) {}

  bool empty() const noexcept { return toxics_.empty(); }
  // A timeout toxic on this stream: its timeout (0: hold until the client leaves).
  std::optional<duration> timeout() const noexcept;
  // The pieces for the next `bytes` bytes of this stream. `extra_bytes_per_s` > 0 adds a
  // bandwidth limit after the toxics (the slow_body fault, faults.hpp). Draws from `rng` only for
  // a latency with jitter and a slicer with variation.
  chunk_plan plan(std::size_t bytes, random_generator& rng, double extra_bytes_per_s = 0);
  std::uint64_t carried() const noexcept { return carried_; }

 private:
  std::vector<toxic> toxics_;
  std::uint64_t carried_ = 0;  // bytes planned so far (limit_data)
};

struct connection_toxics {
  toxic_pipe downstream;                // response bytes toward the client
  toxic_pipe upstream;                  // request bytes toward the server
  std::optional<duration> reset_after;  // reset_peer (either stream): RST this long after opening
  unsigned applied = 0;                 // bit (1 << toxic_kind) per kind that applies
};

// Which toxics apply to a new connection: each one with toxicity < 1 draws once from `rng`, in
// order (toxicity 1 draws nothing), so the same seed and connection order give the same choice.
connection_toxics draw_toxics(const std::vector<toxic>& all, random_generator& rng);

}  // namespace backoff::net
