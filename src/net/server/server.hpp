// SPDX-License-Identifier: Apache-2.0
// `backoff serve` as a library: seed 004's server on Boost.Beast and Asio C++20 coroutines, with
// keep-alive, several threads, a pause that behaves like the seed's SIGSTOP, and graceful
// shutdown by cancellation. Tests and `backoff load --experiment` run it in-process.
//
//   server_options o;  o.port = 0;                   // any free port
//   server s(o);                                     // binds now: errors are exceptions here
//   s.start();                                       // threads serve
//   ... http://127.0.0.1:<s.port()>/api ...
//   s.pause(10s);                                    // or POST /admin/pause?for=10s
//   s.stop();  s.wait();
//
// Three layers (STYLE.md): the pure handler (handler.hpp: routes and responses), the per-connection
// loop (read a request, serve it, write the answer, again while keep-alive), and the network layer
// the proxy runs on too (net/common/connections.hpp: the accept loop, which backs off on accept
// errors with the library's own exponential policy instead of spinning, and the table of
// connections with their deadlines).
// Each thread has its own io_context and its own acceptor over one listening socket (a dup() of
// its descriptor), so threads share nothing but the atomic counters in server_metrics, and a
// second server on a busy port fails to bind instead of silently taking half the traffic.
// With reuse_port (--reuse-port) each thread binds its own socket with SO_REUSEPORT instead,
// and other processes that ask for it too share the port.
//
// Connections: reading a request's header has header_timeout (from its first byte, or from the
// accept), a kept-alive connection waiting for its next request idle_timeout; neither applies to
// a request in service (a paused server holds requests on purpose). At max_connections, a new
// connection takes the place of the oldest idle one of its thread (none: it is closed at once).
//
// Faults: an /api request past --max-busy's check asks the fault plan what to do (faults.hpp):
// reset its connection, hold it, delay it, answer an injected status, or serve it and send a
// slow body. Nothing is asked when the plan is empty.
//
// Pause: /api requests that arrive are read but not started, and the ones in service make no
// progress, until the resume; then the checks that fell due run first, then the held requests
// start. This is what SIGSTOP does to the Go server (the kernel still completes connections and
// buffers requests), except that /metrics and /admin keep answering. SIGSTOP itself works too.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/duration.hpp"
#include "downstream.hpp"
#include "faults/faults.hpp"
#include "metrics.hpp"
#include "service_model.hpp"
#include "systems/system_spec.hpp"
#include "tier.hpp"

namespace backoff::net {

struct server_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8070;  // 0: any free port (see server::port())
  service_params service;
  unsigned threads = 2;
  std::int64_t max_busy =
      0;                    // > 0: answer reject_status once this many /api requests are in service
  int reject_status = 503;  // or 429
  duration retry_after = std::chrono::seconds(1);
  bool cancel_on_disconnect = false;  // a request whose client left stops counting
  // The share of its service a request gets when its propagated deadline (grpc-timeout,
  // x-envoy-expected-rq-timeout-ms) passed before its service started: --expired-cost.
  double expired_cost = 0.05;
  // More are closed at once: memory and descriptors stay bounded. 0: default_max_connections().
  std::int64_t max_connections = 0;
  duration header_timeout = std::chrono::seconds(60);  // nginx's client_header_timeout
  duration idle_timeout = std::chrono::seconds(75);    // nginx's keepalive_timeout
  bool reuse_port = false;        // SO_REUSEPORT: one socket per thread, shareable with others
  std::string admin_token;        // non-empty: /admin/* needs "Authorization: Bearer TOKEN"
  bool log_every_second = false;  // the seed's "concurrency: N, last delay: D" on stderr
  // Faults injected into /api requests (faults.hpp; docs/NETWORK.md, "Faults on demand"), their
  // times from start(); each thread draws from its own stream of `fault_seed`.
  faults::fault_plan faults;
  std::uint64_t fault_seed = 1;
  // serve --system: one replica of a system file's service (tier.hpp) on one thread, with its
  // workers, queue, discipline, limits and faults (`faults` and `service` above are unused); its
  // draws come from `fault_seed`'s streams.
  std::optional<systems::service_spec> tier;
  std::vector<downstream_spec> tier_calls;  // its calls downstream (downstream.hpp)
  // > 0: the tier keeps its figures per bucket of this width too (tier_figures::buckets).
  std::chrono::nanoseconds tier_bucket{0};
};

// The connections a server with `threads` threads can hold within the soft RLIMIT_NOFILE: the
// limit minus a reserve of 64 + 4 per thread (at most half the limit) for the listening sockets,
// the threads' event loops, stdio, and a connection accepted past the limit to be closed.
std::int64_t default_max_connections(unsigned threads);

// True when `host` is a loopback address (127.0.0.0/8, ::1): who can reach /admin/* (handler.hpp).
bool is_loopback_address(std::string_view host);

class server {
 public:
  // Binds the port; throws std::system_error naming the address on failure (a port in use, unless
  // both this and the other listener ask for reuse_port).
  explicit server(const server_options& options);
  server(const server&) = delete;
  server& operator=(const server&) = delete;
  ~server();  // stops and waits

  std::uint16_t port() const noexcept;
  // Serves from now on. `origin`: time 0 of the fault schedule and of a tier's figures (now when
  // none), so that the replicas of one system share one clock.
  void start(std::optional<std::chrono::steady_clock::time_point> origin = std::nullopt);
  // Set when a thread's loop ended on an exception (not an expected network outcome): what it
  // said. Thread-safe.
  std::optional<std::string> failure() const;
  // Pauses /api service; with a duration, resumes by itself after it. Thread-safe.
  void pause(std::optional<duration> for_duration = std::nullopt);
  void resume();
  // Stops accepting, closes connections, ends requests in service. Thread-safe, idempotent.
  void stop();
  // Blocks until every server thread has ended (after stop()).
  void wait();

  const server_metrics& metrics() const noexcept;
  // A tier's figures (tier.hpp), once wait() has returned; none for plain serve.
  std::optional<tier_figures> service_figures() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// "host:port", an IPv6 address in brackets ("[::1]:8070").
std::string authority(std::string_view host, std::uint16_t port);

// The URL of /api on `host`:`port`, an IPv6 address in brackets ("http://[::1]:8070/api").
std::string api_url(std::string_view host, std::uint16_t port);

}  // namespace backoff::net
