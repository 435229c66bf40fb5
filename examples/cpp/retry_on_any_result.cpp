// SPDX-License-Identifier: Apache-2.0
// retry_on<E...> on an operation that returns a string: exceptions E are retried, any string
// is a success.
#include <iostream>
#include <stdexcept>
#include <string>

#include "backoff/retry.hpp"

struct transient_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int main() {
  using namespace std::chrono_literals;
  int calls = 0;
  const auto result = backoff::retry(
      [&]() -> std::string {
        if (++calls < 3) throw transient_error("busy");
        return "the body";
      },
      backoff::retry_options{
          .policy = {.backoff = backoff::backoff_policy::constant(10ms), .max_attempts = 5},
          .classify = backoff::retry_on<transient_error>{}});
  std::cout << *result.last << " after " << result.attempts << " attempts\n";  // 3 attempts
}
