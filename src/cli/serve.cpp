// SPDX-License-Identifier: Apache-2.0
// `backoff serve`: seed 004's server (GET /api answers 200 "OK" after a delay that grows with the
// number of requests in service), with keep-alive and several threads, GET /metrics, a pause
// (POST /admin/pause?for=10s, POST /admin/resume, or SIGSTOP/SIGCONT), 503/429 with Retry-After
// past --max-busy, and the seed's once-a-second "concurrency: N, last delay: D" line on stderr.
// SIGINT or SIGTERM stop it gracefully (docs/NETWORK.md).
#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/ip/address.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/random.hpp"
#include "backoff/spec.hpp"
#include "backoff/spelling.hpp"
#include "commands.hpp"
#include "fault_flags.hpp"
#include "listening_command.hpp"
#include "net/server/server.hpp"
#include "output.hpp"
#include "serve_system.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace {

struct serve_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8070;
  std::uint64_t limit = 30;
  double factor = 1.05;
  double k = 15;
  duration base_delay = std::chrono::milliseconds(100);
  duration tick = std::chrono::milliseconds(50);
  unsigned threads = 2;
  std::uint64_t max_busy = 0;
  int reject_status = 503;
  duration retry_after = std::chrono::seconds(1);
  std::optional<std::uint64_t> max_connections;  // default: from the descriptor limit
  duration header_timeout = std::chrono::seconds(60);
  duration idle_timeout = std::chrono::seconds(75);
  std::optional<std::string> admin_token;
  std::optional<std::string> admin_token_file;
  bool reuse_port = false;
  bool cancel_on_disconnect = false;
  double expired_cost = 0.05;
  bool quiet = false;
  fault_flag_values faults;
  service_flags as_service;  // a system's service: --system, or --service-time and the others
};

// A Bearer token (RFC 6750's token68 characters, or any visible ASCII): no spaces or controls,
// which would not survive an Authorization header.
bool check_token(const std::string& flag, const std::string& token) {
  if (token.empty()) {
    std::cerr << "backoff serve: " << flag << ": the token is empty\n";
    return false;
  }
  for (const char c : token) {
    if (c <= ' ' || c > '~') {
      std::cerr << "backoff serve: " << flag
                << ": the token must be visible ASCII characters without spaces or line breaks\n";
      return false;
    }
  }
  return true;
}

// The token from --admin-token-file: the file's contents without the trailing line break.
std::optional<std::string> read_token_file(const std::string& path) {
  const auto fail = [&](const std::string& why) {
    std::cerr << "backoff serve: --admin-token-file: cannot read " << quote_for_message(path)
              << ": " << why << '\n';
    return std::nullopt;
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::strerror(errno));
  std::string text;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return fail(std::strerror(error));
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > 4096) {
      ::close(fd);
      return fail("longer than 4096 bytes (a token file holds one token)");
    }
  }
  ::close(fd);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!check_token("--admin-token-file " + quote_for_message(path), text)) return std::nullopt;
  return text;
}

int run_serve(const serve_options& o, const CLI::App& app) {
  net::server_options options;
  options.service.base_delay = o.base_delay;
  options.service.tick = o.tick;
  options.retry_after = o.retry_after;
  options.header_timeout = o.header_timeout;
  options.idle_timeout = o.idle_timeout;
  options.expired_cost = o.expired_cost;
  if (o.admin_token && o.admin_token_file) {
    std::cerr << "backoff serve: give --admin-token or --admin-token-file, not both\n";
    return exit_usage;
  }
  if (o.admin_token) {
    if (!check_token("--admin-token", *o.admin_token)) return exit_usage;
    options.admin_token = *o.admin_token;
  }
  if (o.admin_token_file) {
    const auto token = read_token_file(*o.admin_token_file);
    if (!token) return exit_usage;
    options.admin_token = *token;
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
  options.port = o.port;
  options.service.limit = static_cast<std::int64_t>(o.limit);
  options.service.factor = o.factor;
  options.service.k = o.k;
  options.threads = o.threads;
  options.max_busy = static_cast<std::int64_t>(o.max_busy);
  options.reject_status = o.reject_status;
  options.cancel_on_disconnect = o.cancel_on_disconnect;
  options.reuse_port = o.reuse_port;
  options.log_every_second = !o.quiet;
  raise_descriptor_limit();
  if (wants_a_service(o.as_service, app)) {
    return serve_a_service(o.as_service, o.faults, app, std::move(options), o.host);
  }
  const auto plan = build_fault_plan(o.faults, "serve");
  if (!plan) return exit_usage;
  options.faults = *plan;
  options.fault_seed = o.faults.seed;
  // Past the descriptor limit accepts fail (EMFILE) and every client waits, /metrics included:
  // by default the server holds fewer connections than that, keeping descriptors in reserve.
  const std::int64_t fitting = net::default_max_connections(o.threads);
  options.max_connections =
      o.max_connections ? static_cast<std::int64_t>(*o.max_connections) : fitting;
  if (options.max_connections > fitting) {
    std::cerr << fmt::format(
        "backoff serve: warning: --max-connections {} is more than the descriptor limit leaves "
        "room for ({}; ulimit -n): past that, new connections wait until others close\n",
        options.max_connections, fitting);
  }
  // /admin/* from the network: refused without a token, guarded by it with one (handler.hpp).
  if (!net::is_loopback_address(o.host)) {
    std::cerr << (options.admin_token.empty()
                      ? fmt::format("backoff serve: warning: listening on {}, not loopback, "
                                    "without --admin-token: /admin/* answers 403; /api and "
                                    "/metrics are open to anyone who can connect\n",
                                    o.host)
                      : fmt::format("backoff serve: warning: listening on {}, not loopback: "
                                    "/admin/* is exposed to the network, behind the token; /api "
                                    "and /metrics are open to anyone who can connect\n",
                                    o.host))
              << std::flush;
  }

  return run_until_stop_signal<net::server>(
      "serve", options, options.faults, [&](const net::server& server) {
        return fmt::format(
            "backoff serve: listening on {} ({} threads, at most {} connections; GET /metrics, "
            "POST /admin/pause, POST /admin/resume)\n",
            net::api_url(o.host, server.port()), o.threads, options.max_connections);
      });
}

}  // namespace

void setup_serve(CLI::App& app, int& status) {
  constexpr auto max_int64 = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  auto o = std::make_shared<serve_options>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "The HTTP server of smira's experiment (2016): latency grows with concurrency (GET /api on "
      "loopback)");
  sub->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  add_count_option<std::uint16_t>(*sub, "--port", o->port,
                                  "Port (0: any free one, printed at start)", 0, 65535)
      ->capture_default_str();
  add_count_option<std::uint64_t>(
      *sub, "--limit", o->limit, "Concurrency served at the base delay (smira's Go server: -limit)",
      0, max_int64)
      ->capture_default_str();
  sub->add_option("--factor", o->factor,
                  "Growth of the delay past the limit (smira's Go server: -factor)")
      ->capture_default_str();
  add_duration_option(*sub, "--base-delay", o->base_delay,
                      "Service time up to the limit (smira's Go server: -baseDelay)")
      ->capture_default_str();
  sub->add_option("--k", o->k, "Concurrency per factor of growth: D = base * factor^((N-limit)/k)")
      ->capture_default_str();
  add_duration_option(*sub, "--tick", o->tick, "How often a request in service checks its delay",
                      {.positive = true})
      ->capture_default_str();
  add_count_option<unsigned>(*sub, "--threads", o->threads, "Server threads", 1, 256)
      ->capture_default_str();
  add_count_option<std::uint64_t>(*sub, "--max-busy", o->max_busy,
                                  "Answer --reject-status with Retry-After once this many /api "
                                  "requests are in service (0: never)",
                                  0, max_int64)
      ->capture_default_str();
  sub->add_option("--reject-status", o->reject_status, "503 or 429")
      ->check(CLI::IsMember({503, 429}))
      ->capture_default_str();
  add_duration_option(*sub, "--retry-after", o->retry_after, "Retry-After sent with a rejection")
      ->capture_default_str();
  add_count_option<std::uint64_t>(
      *sub, "--max-connections", o->max_connections,
      "Open connections at most; a new one past it replaces the oldest idle one, or is closed at "
      "once. Default: the descriptor limit (ulimit -n) minus 64 + 4 per thread",
      1, max_int64);
  add_duration_option(*sub, "--header-timeout", o->header_timeout,
                      "Time to receive a request's header once begun (and a new connection's "
                      "first request, and a client to take an answer); then 408 and close",
                      {.positive = true})
      ->default_str("60s");
  add_duration_option(*sub, "--idle-timeout", o->idle_timeout,
                      "Time a kept-alive connection may wait for its next request",
                      {.positive = true})
      ->default_str("75s");
  sub->add_option("--admin-token", o->admin_token,
                  "Require 'Authorization: Bearer TOKEN' on /admin/* (visible in ps: prefer "
                  "--admin-token-file)");
  sub->add_option("--admin-token-file", o->admin_token_file,
                  "Read the admin token from this file (one line)");
  sub->add_flag("--reuse-port", o->reuse_port,
                "Bind with SO_REUSEPORT, one socket per thread: other servers that ask for it "
                "too share the port (and its connections)");
  sub->add_flag("--cancel-on-disconnect", o->cancel_on_disconnect,
                "Stop counting a request whose client closed the connection (smira's Go server "
                "keeps it)");
  add_percent_option(*sub, "--expired-cost", o->expired_cost,
                     "Share of its service time a request gets when the deadline it carries "
                     "(grpc-timeout, x-envoy-expected-rq-timeout-ms) passed before it started; "
                     "it is then answered 504, as is one whose deadline passes in service")
      ->capture_default_str();
  sub->add_flag("-q,--quiet", o->quiet, "No once-a-second concurrency line");
  add_fault_flags(sub, o->faults);
  add_service_flags(sub, o->as_service);
  sub->callback([o, sub, &status] { status = run_serve(*o, *sub); });
}

}  // namespace backoff::cli
