// SPDX-License-Identifier: Apache-2.0
// Runs one coroutine to completion on a fresh io_context and returns its value; an exception it
// throws is rethrown here. For tests of the coroutine loops.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <optional>
#include <utility>

namespace backoff::testing {

template <class T>
T run_coroutine(boost::asio::awaitable<T> work) {
  boost::asio::io_context io;
  std::optional<T> out;
  boost::asio::co_spawn(io, std::move(work), [&](std::exception_ptr e, T value) {
    if (e) std::rethrow_exception(e);
    out = std::move(value);
  });
  io.run();
  return std::move(*out);
}

}  // namespace backoff::testing
