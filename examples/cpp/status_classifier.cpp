// SPDX-License-Identifier: Apache-2.0
// A classifier for your own status codes: gRPC's, here. UNAVAILABLE and RESOURCE_EXHAUSTED are
// worth retrying (the latter only with a server-given pushback), everything else is an answer
// or a bug. The "service" is simulated (seeded), so the program runs anywhere:
//   build/bin/example_status_classifier [seed]
#include <backoff/backoff.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <optional>
#include <random>
#include <string_view>

namespace {

using namespace std::chrono_literals;

enum class grpc_status : std::uint8_t {
  ok,
  cancelled,
  invalid_argument,
  deadline_exceeded,
  resource_exhausted,
  unavailable
};

struct rpc_reply {
  grpc_status status;
  std::optional<backoff::duration> pushback;  // grpc-retry-pushback-ms, when the server sent it
};

// The rules of gRPC's retry design (A6): retry only the codes the service config lists; a
// pushback from the server sets the next wait.
backoff::verdict classify_grpc(const rpc_reply& r) {
  switch (r.status) {
    case grpc_status::ok:
      return backoff::verdict::success();
    case grpc_status::unavailable:
      return backoff::verdict::retryable(r.pushback);
    case grpc_status::resource_exhausted:
      // Overload without pushback: retrying at once would add to it.
      return r.pushback ? backoff::verdict::retryable(r.pushback) : backoff::verdict::permanent();
    default:
      return backoff::verdict::permanent();
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 12;
  if (argc > 1) {
    const std::string_view arg = argv[1];
    const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), seed);
    if (ec != std::errc{} || end != arg.data() + arg.size()) {
      std::cerr << "example_status_classifier: seed '" << arg << "' is not a whole number\n";
      return 2;
    }
  }
  std::mt19937_64 service(seed);
  // A service that is unavailable 60% of the time and now and then pushes back.
  const auto call = [&](std::uint32_t attempt) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double x = u(service);
    rpc_reply r{x < 0.6 ? grpc_status::unavailable : grpc_status::ok, std::nullopt};
    if (r.status == grpc_status::unavailable && x < 0.1) r.pushback = 300ms;
    std::cout << "attempt " << attempt << ": "
              << (r.status == grpc_status::ok ? "OK" : "UNAVAILABLE")
              << (r.pushback ? " (pushback 300ms)" : "") << "\n";
    return r;
  };

  // Waits are recorded rather than slept, so the example finishes at once; a real client keeps
  // the default env.
  backoff::retry_env env;
  backoff::random_generator jitter(seed);  // the waits' jitter too, so a seed replays a run
  env.random = jitter;
  backoff::duration waited{0};
  env.sleep = [&](backoff::duration d, std::stop_token) {
    waited += d;
    return true;
  };
  const auto result =
      backoff::retry(call,
                     backoff::retry_options{
                         .policy = {.backoff = backoff::parse_policy("grpc"), .max_attempts = 5},
                         .classify = classify_grpc},
                     env);
  std::cout << "outcome: " << backoff::to_string(result.why) << " after " << result.attempts
            << " attempts, " << std::chrono::duration<double>(waited).count() << " s of waits\n";
  return result ? 0 : 1;
}
