// SPDX-License-Identifier: Apache-2.0
// `backoff proxy` as users run it: bad flags are one line and exit 2; in front of `backoff serve`
// it forwards, answers its own /metrics, and stops on SIGTERM with status 0.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "cli_runner.hpp"
#include "loopback_http.hpp"
#include "process_probe.hpp"

namespace proxy_cli_tests {  // named: the unity build merges the tests' anonymous namespaces

using namespace std::chrono_literals;
using backoff::test::http_exchange;
using backoff::test::process_probe;
using backoff::test::run_cli;
using backoff::test::slurp;

struct bad_flags {
  std::vector<std::string> args;
  std::string part;  // what the one line must say
};

TEST(ProxyCli, BadFlagsAreOneLineNamingTheFlagAndExit2) {
  const std::vector<bad_flags> cases = {
      {{"proxy"}, "missing --upstream (required)"},
      {{"proxy", "--upstream", "nohost"}, "--upstream: expected HOST:PORT"},
      {{"proxy", "--upstream", "127.0.0.1:0"}, "--upstream: port 0"},
      {{"proxy", "--upstream", "127.0.0.1:9", "--listen", "::1:80"},
       "--listen: expected HOST:PORT"},
      {{"proxy", "--upstream", "127.0.0.1:9", "--listen", "example.com:80"},
       "--listen: \"example.com\" is not an IP address"},
      {{"proxy", "--upstream", "127.0.0.1:9", "--toxic", "lag(latency=1s)"},
       "--toxic: bad toxic \"lag(latency=1s)\": unknown toxic \"lag\""},
      {{"proxy", "--upstream", "127.0.0.1:9", "--toxic", "bandwidth(rate=fast)"},
       "rate: expected a size per second"},
      {{"proxy", "--upstream", "127.0.0.1:9", "--toxic", "latency(latency=1s, toxicity=2)"},
       "toxicity"},
      {{"proxy", "--upstream", "127.0.0.1:9", "--upstream-timeout", "0"},
       "--upstream-timeout: bad duration \"0\" (must be more than 0)"},
      {{"proxy", "--upstream", "127.0.0.1:9", "--errors", "200%"}, "--errors"},
      {{"proxy", "--upstream", "127.0.0.1:9", "--metrics-path", "metrics"},
       "--metrics-path: expected a path starting with /"},
      {{"proxy", "--upstream", "127.0.0.1:9", "--tocsic", "latency"}, "did you mean '--toxic'"},
  };
  for (const bad_flags& c : cases) {
    const auto r = run_cli(c.args);
    const std::string& part = c.part;
    EXPECT_EQ(r.status, 2) << c.args.back() << ": " << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("backoff proxy", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
  }
}

std::string port_after(const std::string& err, const std::string& prefix) {
  std::smatch m;
  if (std::regex_search(err, m, std::regex(prefix + "http://127\\.0\\.0\\.1:([0-9]+)"))) {
    return m[1];
  }
  return "";
}

TEST(ProxyCli, ForwardsToServeAnswersItsMetricsAndStopsOnSigterm) {
  process_probe serve({"serve", "--port", "0", "--base-delay", "0", "-q"});
  ASSERT_TRUE(backoff::test::wait_for_text(serve.err_path(), "POST /admin/resume)\n"));
  const std::string serve_port = port_after(slurp(serve.err_path()), "listening on ");
  ASSERT_FALSE(serve_port.empty());

  process_probe proxy({"proxy", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:" + serve_port,
                       "--toxic", "latency(latency=1ms)", "--errors", "0%:503"});
  ASSERT_TRUE(backoff::test::wait_for_text(proxy.err_path(), "(GET /metrics)\n"));
  const std::string err = slurp(proxy.err_path());
  const std::string port = port_after(err, "listening on ");
  ASSERT_FALSE(port.empty()) << err;
  EXPECT_NE(err.find("forwarding to http://127.0.0.1:" + serve_port), std::string::npos) << err;
  EXPECT_NE(err.find("backoff proxy: toxic latency(latency=1ms)\n"), std::string::npos) << err;

  const std::string api =
      http_exchange(port, "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(api.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << api;
  EXPECT_TRUE(api.ends_with("\r\n\r\nOK")) << api;
  const std::string metrics =
      http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(metrics.find("backoff_proxy_requests_total{status=\"200\"} 1\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("backoff_proxy_toxics_total{toxic=\"latency\"} 2\n"), std::string::npos)
      << metrics;

  proxy.signal(SIGTERM);
  const auto r = proxy.wait();
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("backoff proxy: Terminated, shutting down\n"), std::string::npos) << r.err;
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait().status, 0);
}

}  // namespace proxy_cli_tests
