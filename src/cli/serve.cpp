// `backoff serve`: seed 004's server (GET /api answers 200 "OK" after a delay that grows with the
// number of requests in service), with keep-alive and several threads, GET /metrics, a pause
// (POST /admin/pause?for=10s, POST /admin/resume, or SIGSTOP/SIGCONT), 503/429 with Retry-After
// past --max-busy, and the seed's once-a-second "concurrency: N, last delay: D" line on stderr.
// SIGINT or SIGTERM stop it gracefully (docs/NETWORK.md).
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <boost/asio/ip/address.hpp>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "commands.hpp"
#include "net/server/server.hpp"

namespace backoff::cli {
namespace {

struct serve_options {
  std::string host = "127.0.0.1";
  std::string port = "8070";
  std::string limit = "30";
  double factor = 1.05;
  double k = 15;
  std::string base_delay = "100ms";
  std::string tick = "50ms";
  std::string threads = "2";
  std::string max_busy = "0";
  int reject_status = 503;
  std::string retry_after = "1s";
  std::string max_connections = "50000";
  bool cancel_on_disconnect = false;
  bool quiet = false;
};

bool to_number(const std::string& flag, const std::string& text, std::int64_t lo, std::int64_t hi,
               std::int64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc{} || end != text.data() + text.size() || out < lo || out > hi) {
    std::cerr << "backoff serve: " << flag << ": expected a whole number from " << lo << " to "
              << hi << ", got '" << text << "'\n";
    return false;
  }
  return true;
}

bool to_duration(const std::string& flag, const std::string& text, bool allow_zero, duration& out) {
  try {
    out = parse_duration(text);
  } catch (const parse_error& e) {
    std::cerr << "backoff serve: " << flag << ": " << e.what() << '\n';
    return false;
  }
  if (!allow_zero && out.count() == 0) {
    std::cerr << "backoff serve: " << flag << " must be more than 0\n";
    return false;
  }
  return true;
}

int run_serve(const serve_options& o) {
  net::server_options options;
  std::int64_t port = 0, limit = 0, threads = 0, max_busy = 0, max_connections = 0;
  if (!to_number("--port", o.port, 0, 65535, port) ||
      !to_number("--limit", o.limit, 0, INT64_MAX, limit) ||
      !to_number("--threads", o.threads, 1, 256, threads) ||
      !to_number("--max-busy", o.max_busy, 0, INT64_MAX, max_busy) ||
      !to_number("--max-connections", o.max_connections, 1, INT64_MAX, max_connections) ||
      !to_duration("--base-delay", o.base_delay, true, options.service.base_delay) ||
      !to_duration("--tick", o.tick, false, options.service.tick) ||
      !to_duration("--retry-after", o.retry_after, true, options.retry_after)) {
    return exit_usage;
  }
  // inf and nan parse as numbers, and would make every delay past the limit infinite or nan.
  if (!std::isfinite(o.factor) || o.factor < 1.0) {
    std::cerr << "backoff serve: --factor: expected a finite number of at least 1, got '"
              << o.factor << "'\n";
    return exit_usage;
  }
  if (!std::isfinite(o.k) || !(o.k > 0)) {
    std::cerr << "backoff serve: --k: expected a finite number more than 0, got '" << o.k << "'\n";
    return exit_usage;
  }
  {
    boost::system::error_code ec;
    boost::asio::ip::make_address(o.host, ec);
    if (ec) {
      std::cerr << "backoff serve: bad --host '" << o.host
                << "': expected an IP address such as 127.0.0.1 or ::1\n";
      return exit_usage;
    }
  }
  options.host = o.host;
  options.port = static_cast<std::uint16_t>(port);
  options.service.limit = limit;
  options.service.factor = o.factor;
  options.service.k = o.k;
  options.threads = static_cast<unsigned>(threads);
  options.max_busy = max_busy;
  options.reject_status = o.reject_status;
  options.max_connections = max_connections;
  options.cancel_on_disconnect = o.cancel_on_disconnect;
  options.log_every_second = !o.quiet;
  raise_descriptor_limit();

  // SIGINT and SIGTERM are waited for here, so they must reach no server thread: block them
  // before the threads start (they inherit the mask).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    net::server server(options);
    server.start();
    // One write: stderr is unbuffered, and scripts wait for this line to read the port.
    std::cerr << fmt::format(
                     "backoff serve: listening on {} ({} threads; GET "
                     "/metrics, POST /admin/pause, POST /admin/resume)\n",
                     net::api_url(o.host, server.port()), threads)
              << std::flush;
    int signal = 0;
    ::sigwait(&stop_signals, &signal);
    std::cerr << "backoff serve: " << ::strsignal(signal) << ", shutting down" << std::endl;
    server.stop();
    server.wait();
  } catch (const std::system_error& e) {
    std::cerr << "backoff serve: " << e.what() << '\n';
    return exit_failure;
  }
  return exit_ok;
}

}  // namespace

void setup_serve(CLI::App& app, int& status) {
  auto o = std::make_shared<serve_options>();
  CLI::App* sub = app.add_subcommand(
      "serve", "Seed 004's HTTP server: latency grows with concurrency (GET /api on loopback)");
  sub->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", o->port, "Port (0: any free one, printed at start)")
      ->capture_default_str();
  sub->add_option("--limit", o->limit, "Concurrency served at the base delay (seed: -limit)")
      ->capture_default_str();
  sub->add_option("--factor", o->factor, "Growth of the delay past the limit (seed: -factor)")
      ->capture_default_str();
  sub->add_option("--base-delay", o->base_delay, "Service time up to the limit (seed: -baseDelay)")
      ->capture_default_str();
  sub->add_option("--k", o->k, "Concurrency per factor of growth: D = base * factor^((N-limit)/k)")
      ->capture_default_str();
  sub->add_option("--tick", o->tick, "How often a request in service checks its delay")
      ->capture_default_str();
  sub->add_option("--threads", o->threads, "Server threads")->capture_default_str();
  sub->add_option("--max-busy", o->max_busy,
                  "Answer --reject-status with Retry-After once this many /api requests are in "
                  "service (0: never)")
      ->capture_default_str();
  sub->add_option("--reject-status", o->reject_status, "503 or 429")
      ->check(CLI::IsMember({503, 429}))
      ->capture_default_str();
  sub->add_option("--retry-after", o->retry_after, "Retry-After sent with a rejection")
      ->capture_default_str();
  sub->add_option("--max-connections", o->max_connections,
                  "Open connections at most; more are closed at once (bounded memory)")
      ->capture_default_str();
  sub->add_flag("--cancel-on-disconnect", o->cancel_on_disconnect,
                "Stop counting a request whose client closed the connection (the seed's server "
                "keeps it)");
  sub->add_flag("-q,--quiet", o->quiet, "No once-a-second concurrency line");
  sub->callback([o, &status] { status = run_serve(*o); });
}

}  // namespace backoff::cli
