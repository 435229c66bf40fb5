// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/async_hedge.hpp takes from its reader's program.
// blocks: 1
// scope: namespace
#include <optional>
#include <string>
#include <string_view>
namespace asio = boost::asio;
struct reply {
  int status;
  std::optional<backoff::duration> retry_after;
};
extern std::string url;
asio::awaitable<reply> http_get_async(const std::string&);
void log(std::string_view);
