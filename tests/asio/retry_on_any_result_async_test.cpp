// SPDX-License-Identifier: Apache-2.0
// retry_on<E...> on any result type through the coroutine loop (async_retry.hpp), and the
// pushback headers of a Boost.Beast response (http_status_classifier and default_classifier
// read them through its count(name)). Time is recording_async_env's manual clock: nothing sleeps.
#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backoff/async_retry.hpp"
#include "backoff/classify.hpp"
#include "backoff/policy.hpp"
#include "recording_async_env.hpp"
#include "run_coroutine.hpp"

namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using namespace std::chrono_literals;
using backoff::duration;
using backoff::outcome;
using backoff::verdict;
using backoff::verdict_kind;
using backoff::testing::run_coroutine;

struct any_result_async_flaky : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct any_result_async_record {
  std::string body;
};

backoff::retry_policy any_result_async_policy(std::uint32_t max_attempts) {
  return {backoff::backoff_policy::constant(2s), max_attempts, 0s};
}

TEST(RetryOnAnyResultAsync, AStringCoroutineRetriesItsExceptions) {
  backoff::testing::recording_async_env rec;
  int calls = 0;
  const auto r = run_coroutine(backoff::async_retry(
      [&]() -> asio::awaitable<std::string> {
        if (++calls < 3) throw any_result_async_flaky("not yet");
        co_return "done";
      },
      backoff::retry_options{.policy = any_result_async_policy(5),
                             .classify = backoff::retry_on<any_result_async_flaky>{}},
      rec.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(r.last, std::optional<std::string>("done"));
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{2s, 2s}));
}

TEST(RetryOnAnyResultAsync, AStructIsASuccessAndAFalseIsStillRetried) {
  backoff::testing::recording_async_env rec;
  const auto r = run_coroutine(backoff::async_retry(
      []() -> asio::awaitable<any_result_async_record> { co_return any_result_async_record{"x"}; },
      backoff::retry_options{.policy = any_result_async_policy(5),
                             .classify = backoff::retry_on<any_result_async_flaky>{}},
      rec.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 1u);

  backoff::testing::recording_async_env rec_bool;
  int calls = 0;
  const auto b = run_coroutine(backoff::async_retry(
      [&]() -> asio::awaitable<bool> { co_return ++calls == 2; },
      backoff::retry_options{.policy = any_result_async_policy(5),
                             .classify = backoff::retry_on<any_result_async_flaky>{}},
      rec_bool.env()));
  EXPECT_EQ(b.why, outcome::succeeded);
  EXPECT_EQ(b.attempts, 2u);
  EXPECT_EQ(rec_bool.sleeps, (std::vector<duration>{2s}));
}

http::response<http::string_body> any_result_async_reply(http::status status) {
  http::response<http::string_body> r{status, 11};
  return r;
}

TEST(BeastResponsePushback, HttpStatusClassifierReadsThePushbackHeaders) {
  const backoff::http_status_classifier c;
  auto pushed = any_result_async_reply(http::status::service_unavailable);
  pushed.set("grpc-retry-pushback-ms", "250");
  verdict exact{verdict_kind::retryable, 250ms};
  exact.pushback = true;
  EXPECT_EQ(c(pushed), exact);

  auto stop = any_result_async_reply(http::status::service_unavailable);
  stop.set("grpc-retry-pushback-ms", "");
  EXPECT_EQ(c(stop), verdict::permanent()) << "present and empty: do not retry";

  auto twice = any_result_async_reply(http::status::service_unavailable);
  twice.insert("grpc-retry-pushback-ms", "100");
  twice.insert("grpc-retry-pushback-ms", "10");
  EXPECT_EQ(c(twice), verdict::permanent()) << "two values: do not retry, as grpc-go";

  auto refused = any_result_async_reply(http::status::service_unavailable);
  refused.set(http::field::retry_after, "3");
  verdict not_sent{verdict_kind::retryable, 3s};
  not_sent.not_sent = true;
  EXPECT_EQ(c(refused), not_sent);

  auto amz = any_result_async_reply(http::status::internal_server_error);
  amz.set("x-amz-retry-after", "20000");
  amz.set(http::field::retry_after, "1");
  EXPECT_EQ(c(amz), verdict::retryable(5s)) << "x-amz-retry-after over Retry-After, capped";

  EXPECT_EQ(backoff::default_classifier{}(pushed), exact);
  EXPECT_EQ(backoff::default_classifier{}(any_result_async_reply(http::status::ok)),
            verdict::success());
}

TEST(BeastResponsePushback, TheCoroutineLoopWaitsThePushback) {
  backoff::testing::recording_async_env rec;
  int calls = 0;
  const auto r = run_coroutine(backoff::async_retry(
      [&]() -> asio::awaitable<http::response<http::string_body>> {
        if (++calls == 1) {
          auto busy = any_result_async_reply(http::status::too_many_requests);
          busy.set("grpc-retry-pushback-ms", "2500");
          co_return busy;
        }
        co_return any_result_async_reply(http::status::ok);
      },
      backoff::retry_options{.policy = any_result_async_policy(5),
                             .classify = backoff::retry_on<any_result_async_flaky>{}},
      rec.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{2500ms}))
      << "retry_on reads a response by its status, never as a plain success";
}

}  // namespace
