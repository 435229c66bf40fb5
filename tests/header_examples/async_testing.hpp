// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/async_testing.hpp takes from its reader's program.
// blocks: 1
// scope: coroutine
#include <chrono>
using namespace std::chrono_literals;
boost::asio::awaitable<bool> always_failing();
