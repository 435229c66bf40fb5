// SPDX-License-Identifier: Apache-2.0
// A system file's client groups for real (net/client/system_clients.hpp) against one in-process
// tier: what the clients count is what the tier counts, and a stop ends the calls in flight,
// their operations counted unfinished. Small and short, so that they run under the sanitizers
// too (the whole `load --system` is tested in tests/experiments, in the plain build).
#include "net/client/system_clients.hpp"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/config_reader.hpp"
#include "net/server/server.hpp"
#include "report/recorder.hpp"
#include "systems/system_spec.hpp"

namespace system_clients_test {

using namespace std::chrono_literals;
namespace net = backoff::net;
namespace systems = backoff::systems;
namespace report = backoff::report;
using steady = std::chrono::steady_clock;

// One service `api` with `service_keys`, called by one client group with `group_keys`, on an
// edge with `edge_keys` (by default: tried twice at once); resolved under one strategy that keeps
// the edges as written.
systems::system_spec one_service(
    const std::string& service_keys, const std::string& group_keys,
    const std::string& edge_keys = "policy = \"none\"\nmax_attempts = 2") {
  const std::string text = "[run]\nduration = \"400ms\"\n[service.api]\n" + service_keys +
                           "\n[[clients]]\nto = \"api\"\n" + group_keys +
                           "\nedge = \"front\"\n[edge.front]\n" + edge_keys + "\n";
  auto root = std::make_shared<toml::table>(toml::parse(text, std::string_view{"one.toml"}));
  backoff::config::config_reader keys{root, "one.toml", {}};
  systems::system_spec spec = systems::read_system(keys);
  static const backoff::strategy top;
  static const std::vector<systems::edge_setting> none;
  spec.resolve(std::vector<systems::strategy_edges>{{"as-is", "one.toml", &top, &none}});
  return spec;
}

struct served {
  explicit served(const systems::system_spec& spec) {
    net::server_options o;
    o.port = 0;
    o.tier = spec.services[0];
    server = std::make_unique<net::server>(o);
    where = {{boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"),
                                             server->port())}};
  }
  std::unique_ptr<net::server> server;
  std::vector<net::system_clients::endpoints> where;
};

report::recorder recorder_of(const systems::system_spec& spec) {
  report::recorder_options o;
  o.strategy = "as-is";
  o.bucket = spec.bucket;
  return report::recorder(o, nullptr);
}

// Runs the clients from `origin` until the arrivals are over and every operation has ended (or
// 5 s: a client that hangs fails its test instead of the suite).
void run_until_done(net::system_clients& clients, boost::asio::io_context& io,
                    steady::time_point origin) {
  clients.start(origin);
  boost::asio::steady_timer watch(io);
  std::function<void()> poll = [&] {
    watch.expires_after(10ms);
    watch.async_wait([&](const boost::system::error_code&) {
      if (clients.done() || steady::now() - origin > 5s) return clients.stop(steady::now());
      poll();
    });
  };
  poll();
  io.run();
}

struct client_run {
  report::strategy_summary summary;
  std::uint64_t operations = 0;  // as the clients counted them
};

// Starts `s` and the clients of `spec` against it `lead` from now, runs them to the end
// (run_until_done), stops the server, and finishes the summary `end` after the origin (zero:
// when the server had stopped).
client_run run_against(const systems::system_spec& spec, served& s,
                       std::chrono::nanoseconds end = {}, steady::duration lead = {}) {
  const auto origin = steady::now() + lead;
  s.server->start(origin);
  report::recorder out = recorder_of(spec);
  boost::asio::io_context io(1);
  net::system_clients clients(spec, 0, s.where, 3, out, io.get_executor());
  run_until_done(clients, io, origin);
  s.server->stop();
  s.server->wait();
  if (end == std::chrono::nanoseconds{}) {
    end = std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - origin);
  }
  return {out.finish(end.count(), 0), clients.operations()};
}

TEST(SystemClients, WhatTheClientsCountIsWhatTheServiceCounts) {
  // A fifth of the answers fail, and each failure is tried once more at once.
  const systems::system_spec spec = one_service(
      "workers = 4\nqueue = 100\nservice_time = \"constant(value=1ms)\"\nerrors = \"20%:503\"",
      "arrivals = { kind = \"poisson\", rate = 400 }");
  served s(spec);
  const client_run run = run_against(spec, s, {}, 10ms);
  const report::strategy_summary& summary = run.summary;
  const auto figures = s.server->service_figures();
  ASSERT_TRUE(figures.has_value());
  EXPECT_GT(summary.operations, 80u);  // 400/s over 400 ms: 160 expected
  EXPECT_EQ(summary.operations, run.operations);
  EXPECT_EQ(summary.unfinished, 0u);
  EXPECT_EQ(summary.attempts, figures->total.attempts);
  EXPECT_EQ(summary.operations, figures->total.arrivals);
  EXPECT_EQ(summary.completed, figures->total.completed);
  // An operation fails when both its tries failed: 4 % of them.
  EXPECT_EQ(summary.gave_up, summary.operations - summary.completed);
  EXPECT_LT(summary.gave_up, summary.operations / 10 + 3);
  std::uint64_t failed_attempts = 0;
  for (const auto& b : summary.buckets) failed_attempts += b.errors;
  EXPECT_EQ(failed_attempts, figures->total.failed);
}

TEST(SystemClients, AStopEndsTheCallsInFlightAndCountsThemUnfinished) {
  // Every request hangs for a minute: the users' first operations are in flight at the stop.
  const systems::system_spec spec =
      one_service("workers = 0\nservice_time = \"constant(value=60s)\"",
                  "arrivals = { kind = \"closed\", users = 12 }\nthink = \"constant(value=1ms)\"");
  served s(spec);
  const auto origin = steady::now();
  s.server->start(origin);
  report::recorder out = recorder_of(spec);
  boost::asio::io_context io(1);
  net::system_clients clients(spec, 0, s.where, 3, out, io.get_executor());
  clients.start(origin);
  boost::asio::steady_timer stop(io);
  stop.expires_after(300ms);
  stop.async_wait([&](const boost::system::error_code&) { clients.stop(steady::now()); });
  const auto before = steady::now();
  io.run();
  EXPECT_LT(steady::now() - before, 3s);
  EXPECT_TRUE(clients.done());
  s.server->stop();
  s.server->wait();
  const report::strategy_summary summary = out.finish(400'000'000, 0);
  EXPECT_EQ(summary.operations, 12u);
  EXPECT_EQ(summary.unfinished, 12u);
  EXPECT_EQ(summary.completed, 0u);
  EXPECT_EQ(summary.attempts, 12u);
}

// A server that sends an interim answer (103 Early Hints) before each final one: the clients skip
// it and count the final answer, once.
TEST(SystemClients, AnInterimAnswerIsSkippedAndTheFinalOneCounted) {
  const systems::system_spec spec =
      one_service("workers = 0",
                  "arrivals = { kind = \"closed\", users = 1 }\noperations = 3\n"
                  "think = \"constant(value=1ms)\"");
  boost::asio::io_context server_io(1);
  boost::asio::ip::tcp::acceptor acceptor(server_io,
                                          {boost::asio::ip::make_address("127.0.0.1"), 0});
  std::thread answering([&] {
    boost::asio::ip::tcp::socket socket(server_io);
    acceptor.accept(socket);
    std::string pending;
    char chunk[1024];
    for (int answered = 0; answered < 3;) {
      boost::system::error_code ec;
      const std::size_t n = socket.read_some(boost::asio::buffer(chunk), ec);
      if (ec) return;
      pending.append(chunk, n);
      for (std::size_t end; (end = pending.find("\r\n\r\n")) != std::string::npos; ++answered) {
        pending.erase(0, end + 4);
        boost::asio::write(
            socket,
            boost::asio::buffer(std::string_view("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                                                 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")),
            ec);
      }
    }
  });
  const std::vector<net::system_clients::endpoints> where{{boost::asio::ip::tcp::endpoint(
      boost::asio::ip::make_address("127.0.0.1"), acceptor.local_endpoint().port())}};
  report::recorder out = recorder_of(spec);
  boost::asio::io_context io(1);
  net::system_clients clients(spec, 0, where, 3, out, io.get_executor());
  run_until_done(clients, io, steady::now());
  answering.join();
  const report::strategy_summary summary = out.finish(1'000'000'000, 0);
  EXPECT_EQ(summary.operations, 3u);
  EXPECT_EQ(summary.completed, 3u);
  EXPECT_EQ(summary.attempts, 3u);  // the interim answers neither failed nor were retried
}

// A hedged edge (gRPC A6): a second copy 50 ms after the first when the first has not answered;
// the first answer wins and the other copy's connection is closed. The service counts both.
TEST(SystemClients, AHedgedCallSendsItsCopiesAndTheFirstAnswerWins) {
  const systems::system_spec spec =
      one_service("workers = 0\nservice_time = \"constant(value=150ms)\"",
                  "arrivals = { kind = \"closed\", users = 4 }\noperations = 8\n"
                  "think = \"constant(value=1ms)\"",
                  "hedge = \"hedge(max_attempts=2, delay=50ms)\"");
  served s(spec);
  const report::strategy_summary summary = run_against(spec, s, 2s).summary;
  EXPECT_EQ(summary.operations, 8u);
  EXPECT_EQ(summary.completed, 8u);
  EXPECT_EQ(summary.attempts, 16u);  // every call sent its second copy at 50 ms
  EXPECT_EQ(s.server->service_figures()->total.attempts, 16u);
  ASSERT_TRUE(summary.latency_s.has_value());
  EXPECT_LT(summary.latency_s->max, 0.19);  // the first copy's answer, not the second's (200 ms)
}

// A fatal answer (a status not in non_fatal) ends the hedged call at once; a non-fatal one sends
// the next copy at once, without waiting for the delay.
TEST(SystemClients, AHedgedCallEndsOnAFatalAnswerAndHurriesOnANonFatalOne) {
  for (const auto& [status, attempts] : {std::pair{"500", 1u}, std::pair{"503", 3u}}) {
    SCOPED_TRACE(status);
    const systems::system_spec spec = one_service(
        std::string("workers = 0\nservice_time = \"constant(value=1ms)\"\nerrors = \"100%:") +
            status + "\"",
        "arrivals = { kind = \"closed\", users = 1 }\noperations = 1",
        "hedge = \"hedge(max_attempts=3, delay=10s, non_fatal=[503])\"");
    served s(spec);
    const auto before = steady::now();
    const report::strategy_summary summary = run_against(spec, s, 1s).summary;
    EXPECT_LT(steady::now() - before, 2s);  // never the 10 s delay
    EXPECT_EQ(summary.gave_up, 1u);
    EXPECT_EQ(summary.attempts, attempts);
  }
}

// Outlier ejection from the caller's own answers: of two replicas, the one that fails every
// request is left out after three failures in a row, and every later operation goes to the other.
TEST(SystemClients, AReplicaThatFailsInARowIsEjectedByItsCaller) {
  const std::string group =
      "arrivals = { kind = \"closed\", users = 1 }\noperations = 20\n"
      "think = \"constant(value=1ms)\"";
  const std::string edge = "max_attempts = 1";
  const systems::system_spec spec = one_service(
      "replicas = 2\nworkers = 0\nservice_time = \"constant(value=1ms)\"\n"
      "outlier_ejection = \"consecutive(failures=3, base=30s, max_share=50%)\"",
      group, edge);
  // Replica 0 fails everything; replica 1 serves.
  const served bad(one_service("workers = 0\nerrors = \"100%:503\"", group, edge));
  const served good(one_service("workers = 0", group, edge));
  const std::vector<net::system_clients::endpoints> where{{bad.where[0][0], good.where[0][0]}};
  const auto origin = steady::now();
  bad.server->start(origin);
  good.server->start(origin);
  report::recorder out = recorder_of(spec);
  boost::asio::io_context io(1);
  net::system_clients clients(spec, 0, where, 3, out, io.get_executor());
  run_until_done(clients, io, origin);
  bad.server->stop();
  good.server->stop();
  bad.server->wait();
  good.server->wait();
  const report::strategy_summary summary = out.finish(1'000'000'000, 0);
  EXPECT_EQ(summary.operations, 20u);
  EXPECT_EQ(summary.gave_up, 3u);  // round robin: operations 1, 3 and 5 met the bad replica
  EXPECT_EQ(bad.server->service_figures()->total.attempts, 3u);
  EXPECT_EQ(good.server->service_figures()->total.attempts, 17u);
}

}  // namespace system_clients_test
