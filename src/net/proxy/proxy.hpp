// SPDX-License-Identifier: Apache-2.0
// `backoff proxy` as a library: an HTTP/1.1 reverse proxy between a user's own client and server
// that injects the faults of `backoff serve` (faults.hpp: errors, latency, outages, slow bodies,
// Envoy's fault headers) and Toxiproxy's toxics on the bytes (toxics.hpp). Tests run it
// in-process in front of a net::server.
//
//   proxy_options o;  o.upstream_host = "127.0.0.1";  o.upstream_port = 8080;
//   o.toxics.push_back(parse_toxic("latency(latency=100ms)"));
//   proxy p(o);                                      // binds now: errors are exceptions here
//   p.start();
//   ... http://127.0.0.1:<p.port()>/anything goes to the upstream ...
//   p.stop();  p.wait();
//
// Three layers, as the server: the pure parts (toxics.hpp's plans, faults.hpp's decisions,
// rewrite.hpp's rewriting of the messages), the per-connection loop (read a request from the
// client, decide its faults, forward it on the connection's own upstream connection, relay the
// answer), and the network layer serve runs on too (net/common/connections.hpp: the accept loop,
// which backs off on accept errors, and the table of connections with their deadlines). One
// thread, one io_context: nothing is shared but the atomic counters of proxy_metrics.
//
// Memory per connection is bounded: a request header of at most request_header_limit bytes
// (beyond: 400), an answer's header of at most response_header_limit (beyond: 502), and bodies
// relayed in chunks of relay_chunk bytes (Beast's buffer_body), never whole.
//
// Hostile input (docs/NETWORK.md, "backoff proxy"; docs/RELIABILITY.md, "Hostile HTTP"): a request
// is checked as serve checks it (refuse_framing) before anything of it is forwarded, and goes on
// with the framing the proxy's parser read, never the client's fields as they came; trailers are
// dropped; 1xx answers reach HTTP/1.1 clients only; Via carries a pseudonym drawn per proxy, and a
// request that carries it already (a loop) is answered 508; answers without Date get one; at
// max_connections the connection that waited longest for a request (idle or half-sent) makes room.
//
// Upstream errors are answers, never crashes: refused (or no address answers) 502, no answer's
// header within upstream_timeout 504 (and a connect that takes as long), an answer that does not
// parse 502, a connection reset or closed before the answer's header 502; each counted by kind.
// Once the answer's header went to the client, an upstream failure can only close the client's
// connection (counted the same).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/duration.hpp"
#include "faults/faults.hpp"
#include "net/proxy/toxics.hpp"

namespace backoff::net {

inline constexpr std::uint32_t response_header_limit = 64 * 1024;
inline constexpr std::size_t relay_chunk = 16 * 1024;

struct proxy_options {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 0;  // 0: any free port (see proxy::port())
  std::string upstream_host;      // an IP address or a name (resolved once, by the constructor)
  std::uint16_t upstream_port = 0;
  bool rewrite_host = false;  // Host: upstream_host:upstream_port instead of the client's
  duration upstream_timeout = std::chrono::seconds(10);  // connect, and each read of the answer
  duration header_timeout = std::chrono::seconds(60);    // a client's request header, as serve
  duration idle_timeout = std::chrono::seconds(75);      // a kept-alive client connection
  std::string metrics_path = "/metrics";                 // GET here is answered by the proxy
  faults::fault_plan faults;
  std::vector<toxic> toxics;
  std::uint64_t seed = 1;
  // More client connections: the one that waited longest for a request (idle or half-sent)
  // makes room, and when none waits the new one is closed at once (each holds two descriptors).
  // 0: half of default_max_connections(1) (server.hpp).
  std::int64_t max_connections = 0;
};

enum class upstream_error : unsigned { refused, timeout, bad_response, reset };
inline constexpr unsigned upstream_error_count = 4;
std::string_view upstream_error_name(upstream_error e) noexcept;

// What the proxy counts, from its thread; read from any thread.
class proxy_metrics {
 public:
  void answered(int status) noexcept;
  void upstream_failed(upstream_error e) noexcept;
  void faults_fired(unsigned fired_bits) noexcept;      // fault_decision::fired
  void toxics_applied(unsigned applied_bits) noexcept;  // connection_toxics::applied
  void relayed(toxic_stream s, std::uint64_t bytes) noexcept;

  std::atomic<std::int64_t> connections{0};           // open client connections
  std::atomic<std::uint64_t> connections_total{0};    // accepted
  std::atomic<std::uint64_t> connections_refused{0};  // closed at once at max_connections
  std::atomic<std::uint64_t> connections_evicted{0};  // closed to make room for a new one

  std::uint64_t requests(int status) const noexcept;
  std::uint64_t upstream_errors(upstream_error e) const noexcept;
  std::uint64_t faults(faults::fault_counter c) const noexcept;
  std::uint64_t toxics(toxic_kind k) const noexcept;
  std::uint64_t bytes(toxic_stream s) const noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, 500> statuses_{};  // 100..599
  std::array<std::atomic<std::uint64_t>, upstream_error_count> upstream_{};
  std::array<std::atomic<std::uint64_t>, faults::fault_counter_count> faults_{};
  std::array<std::atomic<std::uint64_t>, toxic_kind_count> toxics_{};
  std::array<std::atomic<std::uint64_t>, 2> bytes_{};
};

// The Prometheus text of GET /metrics (or --metrics-path).
std::string prometheus_text(const proxy_metrics& m);

class proxy {
 public:
  // Binds the listening port and resolves the upstream; throws std::system_error naming the
  // address on failure.
  explicit proxy(const proxy_options& options);
  proxy(const proxy&) = delete;
  proxy& operator=(const proxy&) = delete;
  ~proxy();  // stops and waits

  std::uint16_t port() const noexcept;
  void start();
  // Stops accepting, closes every connection. Thread-safe, idempotent.
  void stop();
  // Blocks until the proxy's thread has ended (after stop()).
  void wait();

  const proxy_metrics& metrics() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// "HOST:PORT", "[::1]:PORT" into host and port; false when it is not that shape (a port outside
// 0..65535, no port, an IPv6 address without brackets).
bool split_host_port(std::string_view text, std::string& host, std::uint16_t& port);

}  // namespace backoff::net
