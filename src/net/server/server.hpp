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
// loop (read a request, serve it, write the answer, again while keep-alive), and the accept loop
// (backs off on accept errors with the library's own exponential policy instead of spinning).
// Each thread has its own io_context and its own acceptor on the same port (SO_REUSEPORT), so
// threads share nothing but the atomic counters in server_metrics.
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

#include "backoff/duration.hpp"
#include "metrics.hpp"
#include "service_model.hpp"

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
  bool cancel_on_disconnect = false;     // a request whose client left stops counting
  std::int64_t max_connections = 50000;  // more are closed at once: memory stays bounded
  bool log_every_second = false;         // the seed's "concurrency: N, last delay: D" on stderr
};

class server {
 public:
  // Binds the port; throws std::system_error naming the address on failure.
  explicit server(const server_options& options);
  server(const server&) = delete;
  server& operator=(const server&) = delete;
  ~server();  // stops and waits

  std::uint16_t port() const noexcept;
  void start();
  // Pauses /api service; with a duration, resumes by itself after it. Thread-safe.
  void pause(std::optional<duration> for_duration = std::nullopt);
  void resume();
  // Stops accepting, closes connections, ends requests in service. Thread-safe, idempotent.
  void stop();
  // Blocks until every server thread has ended (after stop()).
  void wait();

  const server_metrics& metrics() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// The URL of /api on `host`:`port`, an IPv6 address in brackets ("http://[::1]:8070/api").
std::string api_url(std::string_view host, std::uint16_t port);

}  // namespace backoff::net
