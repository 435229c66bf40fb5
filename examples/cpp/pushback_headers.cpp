// SPDX-License-Identifier: Apache-2.0
// A reply's status and headers, whatever your HTTP client: give classify_http_reply a lookup.
#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "backoff/http.hpp"
#include "backoff/retry.hpp"

struct reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names as the client stores them
};

reply call_service(int attempt) {
  if (attempt == 1) return {503, {{"grpc-retry-pushback-ms", "250"}}};
  if (attempt == 2) return {429, {{"Retry-After", "1"}}};
  return {200, {}};
}

int main() {
  using namespace std::chrono_literals;
  const auto result =
      backoff::retry([](std::uint32_t attempt) { return call_service(static_cast<int>(attempt)); },
                     backoff::retry_options{
                         .policy = {.backoff = backoff::backoff_policy::exponential(100ms, 2.0, 5s),
                                    .max_attempts = 4},
                         .classify = [](const reply& r) {
                           const auto headers = backoff::retry_headers::from(
                               [&r](const char* name) -> std::optional<std::string_view> {
                                 const auto it = r.headers.find(name);
                                 if (it == r.headers.end()) return std::nullopt;
                                 return it->second;
                               });
                           return backoff::classify_http_reply(r.status, headers,
                                                               std::chrono::system_clock::now());
                         }});
  std::cout << backoff::to_string(result.why) << " after " << result.attempts << " attempts\n";
}
