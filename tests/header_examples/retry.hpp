// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/retry.hpp takes from its reader's program.
// blocks: 1
// scope: function
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
using namespace std::chrono_literals;
struct reply {
  int status;
  std::optional<backoff::duration> retry_after;
};
extern std::string url;
reply http_get(const std::string&);
void use(const reply&);
void log(std::string_view, std::uint32_t attempts);
