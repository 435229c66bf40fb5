// SPDX-License-Identifier: Apache-2.0
// The one Asio wait of the async retry loop, compiled once here rather than in every caller.
// async_sleep follows the rule in async_retry.hpp ("GCC before 13"): a plain function that moves
// its arguments, taken by value, into a coroutine.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <optional>
#include <utility>

#include "backoff/async_retry.hpp"

namespace backoff {

namespace asio = boost::asio;

namespace {

asio::awaitable<bool> sleep_on_timer(duration d, std::stop_token stop) {
  if (stop.stop_requested()) co_return false;
  auto executor = co_await asio::this_coro::executor;
  // Shared, because a stop request may arrive on another thread after this coroutine has ended:
  // the posted cancel then finds the timer gone and does nothing.
  auto timer = std::make_shared<asio::steady_timer>(executor, d);
  std::optional<std::stop_callback<std::function<void()>>> on_stop;
  if (stop.stop_possible()) {
    on_stop.emplace(stop, std::function<void()>([weak = std::weak_ptr(timer), executor] {
                      asio::post(executor, [weak] {
                        if (auto t = weak.lock()) t->cancel();
                      });
                    }));
  }
  const auto [ec] = co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
  co_return !ec && !stop.stop_requested();
}

}  // namespace

asio::awaitable<bool> async_sleep(duration d, std::stop_token stop) {
  return sleep_on_timer(d, std::move(stop));
}

}  // namespace backoff
