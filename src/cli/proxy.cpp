// SPDX-License-Identifier: Apache-2.0
// `backoff proxy`: an HTTP/1.1 reverse proxy between a user's own client and server that injects
// the faults of `backoff serve` (the shared fault flags, fault_flags.hpp) and Toxiproxy's toxics
// on the bytes (--toxic, net/proxy/toxics.hpp). It listens on loopback by default, answers
// GET /metrics itself (--metrics-path moves it), and stops gracefully on SIGINT or SIGTERM
// (docs/NETWORK.md, "backoff proxy").
#include "net/proxy/proxy.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <boost/asio/ip/address.hpp>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "backoff/error.hpp"
#include "commands.hpp"
#include "fault_flags.hpp"
#include "listening_command.hpp"
#include "net/server/server.hpp"
#include "output.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace {

struct proxy_flags {
  std::string listen = "127.0.0.1:8071";
  std::string upstream;
  bool rewrite_host = false;
  duration upstream_timeout = std::chrono::seconds(10);
  duration header_timeout = std::chrono::seconds(60);
  duration idle_timeout = std::chrono::seconds(75);
  std::string metrics_path = "/metrics";
  std::vector<std::string> toxics;
  fault_flag_values faults;
};

bool to_address(const std::string& flag, const std::string& text, std::string& host,
                std::uint16_t& port) {
  if (!net::split_host_port(text, host, port)) {
    std::cerr << "backoff proxy: " << flag << ": expected HOST:PORT such as 127.0.0.1:8080 or "
              << "[::1]:8080, got " << quote_for_message(text) << '\n';
    return false;
  }
  return true;
}

int run_proxy(const proxy_flags& f) {
  net::proxy_options o;
  if (!to_address("--listen", f.listen, o.listen_host, o.listen_port) ||
      !to_address("--upstream", f.upstream, o.upstream_host, o.upstream_port)) {
    return exit_usage;
  }
  o.upstream_timeout = f.upstream_timeout;
  o.header_timeout = f.header_timeout;
  o.idle_timeout = f.idle_timeout;
  {
    boost::system::error_code ec;
    boost::asio::ip::make_address(o.listen_host, ec);
    if (ec) {
      std::cerr << "backoff proxy: --listen: " << quote_for_message(o.listen_host)
                << " is not an IP address (such as 127.0.0.1 or [::1])\n";
      return exit_usage;
    }
  }
  if (o.upstream_port == 0) {
    std::cerr << "backoff proxy: --upstream: port 0 is not a server's port\n";
    return exit_usage;
  }
  if (!f.metrics_path.starts_with('/')) {
    std::cerr << "backoff proxy: --metrics-path: expected a path starting with /, got "
              << quote_for_message(f.metrics_path) << '\n';
    return exit_usage;
  }
  o.metrics_path = f.metrics_path;
  o.rewrite_host = f.rewrite_host;
  for (const std::string& spec : f.toxics) {
    try {
      o.toxics.push_back(net::parse_toxic(spec));
    } catch (const parse_error& e) {
      std::cerr << "backoff proxy: --toxic: " << e.what() << '\n';
      return exit_usage;
    }
  }
  const auto plan = build_fault_plan(f.faults, "proxy");
  if (!plan) return exit_usage;
  o.faults = *plan;
  o.seed = f.faults.seed;
  raise_descriptor_limit();
  if (!net::is_loopback_address(o.listen_host)) {
    std::cerr << fmt::format(
                     "backoff proxy: warning: listening on {}, not loopback: anyone who can "
                     "connect reaches {} through it\n",
                     o.listen_host, f.upstream)
              << std::flush;
  }

  return run_until_stop_signal<net::proxy>("proxy", o, o.faults, [&](const net::proxy& proxy) {
    std::string text =
        fmt::format("backoff proxy: listening on http://{}, forwarding to http://{} (GET {})\n",
                    net::authority(o.listen_host, proxy.port()), f.upstream, o.metrics_path);
    for (const net::toxic& t : o.toxics) text += "backoff proxy: toxic " + t.spec + "\n";
    return text;
  });
}

}  // namespace

void setup_proxy(CLI::App& app, int& status) {
  auto f = std::make_shared<proxy_flags>();
  CLI::App* sub = app.add_subcommand(
      "proxy",
      "HTTP/1.1 reverse proxy that injects faults and Toxiproxy's toxics between a client and "
      "its server");
  sub->add_option("--listen", f->listen,
                  "Address to listen on, HOST:PORT (port 0: any free one, "
                  "printed at start; [::1]:PORT for IPv6)")
      ->capture_default_str();
  sub->add_option("--upstream", f->upstream, "The server to forward to, HOST:PORT")->required();
  sub->add_flag("--rewrite-host", f->rewrite_host,
                "Send Host: the upstream's HOST:PORT instead of the client's Host");
  add_duration_option(*sub, "--upstream-timeout", f->upstream_timeout,
                      "Time the upstream has to accept a connection and to start answering "
                      "(then 504), and for each part of its answer after that",
                      {.positive = true})
      ->capture_default_str();
  add_duration_option(*sub, "--header-timeout", f->header_timeout,
                      "Time a client has to send a request's header once begun (then 408), and "
                      "to take each part of an answer",
                      {.positive = true})
      ->default_str("60s");
  add_duration_option(*sub, "--idle-timeout", f->idle_timeout,
                      "Time a kept-alive client connection may wait for its next request",
                      {.positive = true})
      ->default_str("75s");
  sub->add_option("--metrics-path", f->metrics_path,
                  "Path of the proxy's own Prometheus metrics (GET); other requests to it are "
                  "forwarded")
      ->capture_default_str();
  sub->add_option("--toxic", f->toxics,
                  "A toxic on the bytes (Toxiproxy's): latency(latency=100ms, jitter=10ms), "
                  "bandwidth(rate=64KiB/s), slicer(average_size=64, size_variation=32, "
                  "delay=1ms), timeout(timeout=2s), reset_peer(timeout=0s), limit_data(bytes=N); "
                  "each with toxicity=50% (drawn per connection with --fault-seed) and "
                  "stream=downstream|upstream; repeatable");
  add_fault_flags(sub, f->faults);
  sub->callback([f, &status] { status = run_proxy(*f); });
}

}  // namespace backoff::cli
