// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/async_window.hpp takes from its reader's program.
// blocks: 1
// scope: coroutine
#include <boost/asio/io_context.hpp>
extern boost::asio::io_context io;
struct reply {
  bool ok;
};
struct job_type {};
extern job_type job;
boost::asio::awaitable<reply> send(const job_type&);
