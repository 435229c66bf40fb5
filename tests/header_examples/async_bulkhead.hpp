// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/async_bulkhead.hpp takes from its reader's program.
// blocks: 1
// scope: coroutine
boost::asio::awaitable<void> call();
