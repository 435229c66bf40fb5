// SPDX-License-Identifier: Apache-2.0
// Logging and metrics through hooks: every retry is logged with spdlog, and every loop is
// counted into a retry_metrics, printed at the end in Prometheus' text format (what a /metrics
// endpoint would serve). Four "calls" to a simulated flaky dependency; nothing sleeps.
//   build/bin/example_hooks_logging_metrics
#include <spdlog/spdlog.h>

#include <backoff/backoff.hpp>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace {

using namespace std::chrono_literals;

// Logs what the loop does. Only the members a hooks type defines are called.
struct log_hooks {
  std::string operation;

  template <class R>
  void on_retry(const backoff::retry_event<R>& e) const {
    spdlog::warn("{}: attempt {} {} ({}), retrying in {} ms", operation, e.attempt,
                 e.why.kind == backoff::verdict_kind::retryable ? "failed" : "?",
                 backoff::to_string(e.reason),
                 std::chrono::duration_cast<std::chrono::milliseconds>(e.delay).count());
  }
  void on_success(const backoff::success_event& e) const {
    spdlog::info("{}: succeeded at attempt {}", operation, e.attempts);
  }
  void on_give_up(const backoff::give_up_event& e) const {
    std::string why;
    if (e.error) {
      try {
        std::rethrow_exception(e.error);
      } catch (const std::exception& x) {
        why = std::string(": ") + x.what();
      }
    }
    spdlog::error("{}: gave up ({}) after {} attempts{}", operation, backoff::to_string(e.why),
                  e.attempts, why);
  }
};

struct timeout_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

int main() {
  spdlog::set_pattern("%l %v");
  backoff::retry_metrics metrics;  // shared by every loop; atomic
  backoff::retry_env env;          // waits recorded, not slept, so the example ends at once
  env.sleep = [](backoff::duration, std::stop_token) { return true; };

  int failures_left = 0;
  const auto flaky = [&]() -> std::error_code {
    if (failures_left-- > 0) return make_error_code(std::errc::connection_refused);
    return {};
  };
  for (const int failures : {0, 2, 9}) {
    failures_left = failures;
    (void)backoff::retry(
        flaky,
        backoff::retry_options{
            .policy = {.backoff = backoff::parse_policy("exponential(initial=100ms, max=2s)"),
                       .max_attempts = 4},
            .hooks = backoff::hook_list{log_hooks{"fetch-user"}, backoff::metrics_hooks{&metrics}}},
        env);
  }
  // A call that throws: retry_on retries the timeouts and keeps the last one.
  int calls = 0;
  const auto r = backoff::retry(
      [&] {
        if (++calls < 4) throw timeout_error("read timed out after 2 s");
      },
      backoff::retry_options{
          .policy = {.backoff = backoff::parse_policy("constant(initial=50ms)"), .max_attempts = 3},
          .classify = backoff::retry_on<timeout_error>{},
          .hooks = backoff::hook_list{log_hooks{"write-audit"}, backoff::metrics_hooks{&metrics}}},
      env);
  std::cout << backoff::to_prometheus_text(metrics, "example_rpc");
  return r.error ? 0 : 1;  // the last loop must have kept its exception
}
