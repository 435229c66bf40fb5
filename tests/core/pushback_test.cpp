// SPDX-License-Identifier: Apache-2.0
// Server pushback (http.hpp): grpc-retry-pushback-ms, x-amz-retry-after and Retry-After, their
// grammar, their precedence and not_sent, on their own and through the retry loop on a
// recording_env (a manual clock, recorded sleeps). Cases replayed from gRPC's and botocore's own
// tests name their file and test.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "backoff/classify.hpp"
#include "backoff/http.hpp"
#include "backoff/policy.hpp"
#include "backoff/retry.hpp"
#include "recording_env.hpp"

namespace {

using namespace std::chrono_literals;
using namespace std::chrono;
using backoff::classify_http_reply;
using backoff::duration;
using backoff::outcome;
using backoff::parse_amz_retry_after;
using backoff::parse_grpc_retry_pushback;
using backoff::retry_headers;
using backoff::verdict;
using backoff::verdict_kind;
using backoff::testing::recording_env;

// Sunday, 1 March 2026, 12:00:00 UTC.
const system_clock::time_point pushback_now = sys_days{2026y / March / 1} + 12h;

// A verdict written out field by field: kind, retry_after, pushback, not_sent.
verdict pushback_verdict(verdict_kind kind, std::optional<duration> after, bool pushback,
                         bool not_sent) {
  verdict v{kind, after};
  v.pushback = pushback;
  v.not_sent = not_sent;
  return v;
}

verdict pushback_reply(int status, retry_headers h) {
  return classify_http_reply(status, h, pushback_now);
}

retry_headers grpc_header(std::string_view ms) {
  return {.grpc_retry_pushback_ms = ms};
}
retry_headers amz_header(std::string_view ms) {
  return {.amz_retry_after = ms};
}
retry_headers retry_after_header(std::string_view value) {
  return {.retry_after = value};
}

constexpr duration pushback_max = 2'147'483'647ms;

// --- the grammar of the two millisecond headers ----------------------------------------------

TEST(ParseGrpcRetryPushback, ReadsMillisecondsAndSaturatesAtTheInt32Maximum) {
  EXPECT_EQ(parse_grpc_retry_pushback("123"), std::optional<duration>{123ms});
  EXPECT_EQ(parse_grpc_retry_pushback("0"), std::optional<duration>{0ms});
  EXPECT_EQ(parse_grpc_retry_pushback("4567000"), std::optional<duration>{4567s});
  EXPECT_EQ(parse_grpc_retry_pushback("007"), std::optional<duration>{7ms});
  EXPECT_EQ(parse_grpc_retry_pushback(" 10"), std::optional<duration>{10ms})
      << "the whitespace around a field value is not part of it";
  EXPECT_EQ(parse_grpc_retry_pushback("10\t "), std::optional<duration>{10ms});
  EXPECT_EQ(parse_grpc_retry_pushback("2147483647"), std::optional<duration>{pushback_max});
  EXPECT_EQ(parse_grpc_retry_pushback("2147483648"), std::optional<duration>{pushback_max});
  EXPECT_EQ(parse_grpc_retry_pushback("99999999999999999999999999"),
            std::optional<duration>{pushback_max});
}

TEST(ParseGrpcRetryPushback, AnythingButDigitsAsksNotToRetry) {
  for (const std::string_view bad :
       {"", " ", "-1", "-0", "+5", "1.5", "1e3", "xxx", "10ms", "100, 10", "1 0", "0x10"}) {
    EXPECT_EQ(parse_grpc_retry_pushback(bad), std::nullopt) << '"' << bad << '"';
  }
}

TEST(ParseAmzRetryAfter, SameDigitsAndNoCapOfItsOwn) {
  EXPECT_EQ(parse_amz_retry_after("1500"), std::optional<duration>{1500ms});
  EXPECT_EQ(parse_amz_retry_after("0"), std::optional<duration>{0ms});
  EXPECT_EQ(parse_amz_retry_after("10000"), std::optional<duration>{10s})
      << "the 5 s cap is classify_http_reply's";
  EXPECT_EQ(parse_amz_retry_after(" 10"), std::optional<duration>{10ms});
  EXPECT_EQ(parse_amz_retry_after("99999999999999"), std::optional<duration>{pushback_max});
  for (const std::string_view bad : {"", "invalid", "-100", "+5", "1.5", "1_000"}) {
    EXPECT_EQ(parse_amz_retry_after(bad), std::nullopt) << '"' << bad << '"';
  }
}

// --- each status without headers and with each header ----------------------------------------

TEST(ClassifyHttpReply, WithoutHeadersItIsClassifyHttpStatusPlusNotSentOn429) {
  for (int status : {100, 200, 204, 301, 304, 399, 400, 404, 408, 499, 0, -1, 600}) {
    EXPECT_EQ(pushback_reply(status, {}), backoff::classify_http_status(status)) << status;
  }
  for (int status : {500, 502, 503, 504, 599}) {
    EXPECT_EQ(pushback_reply(status, {}), verdict::retryable()) << status;
  }
  EXPECT_EQ(pushback_reply(429, {}), pushback_verdict(verdict_kind::retryable, {}, false, true));
}

TEST(ClassifyHttpReply, RetryAfterIsAMinimumAndA503WithItWasNotSent) {
  EXPECT_EQ(pushback_reply(503, retry_after_header("5")),
            pushback_verdict(verdict_kind::retryable, 5s, false, true));
  EXPECT_EQ(pushback_reply(503, retry_after_header("Sun, 01 Mar 2026 12:00:30 GMT")),
            pushback_verdict(verdict_kind::retryable, 30s, false, true));
  EXPECT_EQ(pushback_reply(503, retry_after_header("Sun, 01 Mar 2026 11:00:00 GMT")),
            pushback_verdict(verdict_kind::retryable, 0s, false, true))
      << "a date in the past is still a valid Retry-After";
  EXPECT_EQ(pushback_reply(503, retry_after_header("soon")), verdict::retryable())
      << "an invalid Retry-After is ignored, as if absent";
  EXPECT_EQ(pushback_reply(503, retry_after_header("")), verdict::retryable());
  EXPECT_EQ(pushback_reply(500, retry_after_header("5")), verdict::retryable(5s))
      << "a 500 may have been processed, Retry-After or not";
  EXPECT_EQ(pushback_reply(429, retry_after_header("7")),
            pushback_verdict(verdict_kind::retryable, 7s, false, true));
  EXPECT_EQ(pushback_reply(404, retry_after_header("5")), verdict::permanent());
  EXPECT_EQ(pushback_reply(200, retry_after_header("5")), verdict::success());
}

TEST(ClassifyHttpReply, GrpcPushbackIsAnExactWaitOrAStop) {
  EXPECT_EQ(pushback_reply(503, grpc_header("123")),
            pushback_verdict(verdict_kind::retryable, 123ms, true, false));
  EXPECT_EQ(pushback_reply(500, grpc_header("0")),
            pushback_verdict(verdict_kind::retryable, 0ms, true, false));
  // grpc-java RetriableStreamTest.pushback_noRetry: an empty value, do not retry.
  EXPECT_EQ(pushback_reply(500, grpc_header("")), verdict::permanent());
  // grpc-go test/retry_test.go TestRetryStreaming, "Negative server pushback - no retry" and
  // "Non-numeric server pushback - no retry".
  EXPECT_EQ(pushback_reply(503, grpc_header("-1")), verdict::permanent());
  EXPECT_EQ(pushback_reply(503, grpc_header("xxx")), verdict::permanent());
  EXPECT_EQ(pushback_reply(503, grpc_header("+5")), verdict::permanent());
  EXPECT_EQ(pushback_reply(429, grpc_header("-1")),
            pushback_verdict(verdict_kind::permanent, {}, false, true))
      << "not_sent is a fact about the request, whatever the verdict";
  // The status decides first: a success stays one, a 404 stays permanent (grpc-go retries only
  // retryable codes; grpc-java's throttledStream_FailWithNonRetriableStatusCode_
  // WithRetriablePushback retries a non-retryable code on a pushback >= 0: not followed).
  EXPECT_EQ(pushback_reply(200, grpc_header("-1")), verdict::success());
  EXPECT_EQ(pushback_reply(404, grpc_header("100")), verdict::permanent());
}

TEST(ClassifyHttpReply, AmzRetryAfterIsAMinimumCappedAtFiveSeconds) {
  EXPECT_EQ(pushback_reply(500, amz_header("1500")), verdict::retryable(1500ms));
  EXPECT_EQ(pushback_reply(500, amz_header("5000")), verdict::retryable(5s));
  EXPECT_EQ(pushback_reply(500, amz_header("10000")), verdict::retryable(5s));
  EXPECT_EQ(pushback_reply(500, amz_header("invalid")), verdict::retryable());
  EXPECT_EQ(pushback_reply(500, amz_header("-100")), verdict::retryable());
  EXPECT_EQ(pushback_reply(429, amz_header("0")),
            pushback_verdict(verdict_kind::retryable, 0ms, false, true));
  EXPECT_EQ(pushback_reply(400, amz_header("1500")), verdict::permanent());
}

// --- precedence ------------------------------------------------------------------------------

struct pushback_precedence_case {
  int status;
  retry_headers headers;
  verdict expected;
  const char* why;
};

TEST(ClassifyHttpReply, TheMostSpecificValidHeaderWins) {
  using k = verdict_kind;
  const pushback_precedence_case cases[] = {
      {503,
       {"60", "100", "2000"},
       pushback_verdict(k::retryable, 100ms, true, true),
       "gRPC's exact wait over both minimums; Retry-After still proves not_sent"},
      {503,
       {"60", "-1", "2000"},
       pushback_verdict(k::permanent, {}, false, true),
       "gRPC's stop over both"},
      {503,
       {"60", {}, "2000"},
       pushback_verdict(k::retryable, 2s, false, true),
       "x-amz-retry-after over Retry-After"},
      {500, {"30", {}, "1000"}, verdict::retryable(1s), "even when it is the shorter"},
      {500, {"3", {}, "9000"}, verdict::retryable(5s), "capped, it still wins"},
      {503,
       {"60", {}, "bad"},
       pushback_verdict(k::retryable, 60s, false, true),
       "an ignored x-amz-retry-after lets Retry-After apply"},
      {503,
       {"soon", "5", {}},
       pushback_verdict(k::retryable, 5ms, true, false),
       "an invalid Retry-After proves nothing"},
      {500, {"bad", {}, "bad"}, verdict::retryable(), "nothing valid: the backoff alone"},
      {404, {"60", "100", "2000"}, verdict::permanent(), "the status first"},
      {204, {"60", "-1", "2000"}, verdict::success(), "the status first"},
  };
  for (const pushback_precedence_case& c : cases) {
    EXPECT_EQ(pushback_reply(c.status, c.headers), c.expected) << c.status << ": " << c.why;
  }
}

// --- retry_headers::from and responses that have count(name) ---------------------------------

TEST(RetryHeaders, FromALookupTellsAbsentFromEmpty) {
  const std::map<std::string, std::string> fields{{"grpc-retry-pushback-ms", ""},
                                                  {"Retry-After", "5"}};
  const retry_headers h =
      retry_headers::from([&fields](const char* name) -> std::optional<std::string_view> {
        const auto it = fields.find(name);
        if (it == fields.end()) return std::nullopt;
        return it->second;
      });
  EXPECT_EQ(h.retry_after, std::optional<std::string_view>{"5"});
  EXPECT_EQ(h.grpc_retry_pushback_ms, std::optional<std::string_view>{""});
  EXPECT_EQ(h.amz_retry_after, std::nullopt);
  EXPECT_EQ(pushback_reply(503, h), pushback_verdict(verdict_kind::permanent, {}, false, true));
}

// Beast's shape: result_int(), operator[] (the first value, empty when absent) and count(name).
struct pushback_fields_response {
  unsigned status;
  std::multimap<std::string, std::string, std::less<>> fields;
  unsigned result_int() const { return status; }
  std::string_view operator[](std::string_view name) const {
    const auto it = fields.find(name);
    return it == fields.end() ? std::string_view() : std::string_view(it->second);
  }
  std::size_t count(std::string_view name) const { return fields.count(name); }
};

// The shape of retry_options_test's toy_response: no count(name).
struct pushback_plain_response {
  unsigned status;
  std::string retry_after;
  unsigned result_int() const { return status; }
  std::string_view operator[](std::string_view field) const {
    return field == "Retry-After" ? std::string_view(retry_after) : std::string_view();
  }
};

TEST(HttpStatusClassifier, ReadsThePushbackHeadersOfAResponseWithCount) {
  const backoff::http_status_classifier c;
  EXPECT_EQ(c(pushback_fields_response{503, {{"grpc-retry-pushback-ms", "250"}}}),
            pushback_verdict(verdict_kind::retryable, 250ms, true, false));
  EXPECT_EQ(c(pushback_fields_response{503, {{"Retry-After", "9"}}}),
            pushback_verdict(verdict_kind::retryable, 9s, false, true));
  EXPECT_EQ(c(pushback_fields_response{429, {}}),
            pushback_verdict(verdict_kind::retryable, {}, false, true));
  EXPECT_EQ(c(pushback_fields_response{500, {{"x-amz-retry-after", "1500"}}}),
            verdict::retryable(1500ms));
  // grpc-go test/retry_test.go TestRetryStreaming, "Multiple server pushback values - no retry".
  EXPECT_EQ(c(pushback_fields_response{
                503, {{"grpc-retry-pushback-ms", "100"}, {"grpc-retry-pushback-ms", "10"}}}),
            verdict::permanent());
  EXPECT_EQ(c(pushback_fields_response{503, {{"Retry-After", "1"}, {"Retry-After", "2"}}}),
            verdict::retryable())
      << "Retry-After twice is invalid, so ignored";
  // The default classifier reads a response the same way.
  EXPECT_EQ(backoff::default_classifier{}(
                pushback_fields_response{503, {{"grpc-retry-pushback-ms", "250"}}}),
            pushback_verdict(verdict_kind::retryable, 250ms, true, false));
}

TEST(HttpStatusClassifier, AResponseWithoutCountKeepsToStatusAndRetryAfter) {
  const backoff::http_status_classifier c;
  EXPECT_EQ(c(pushback_plain_response{429, "7"}), verdict::retryable(7s));
  EXPECT_EQ(c(pushback_plain_response{503, "7"}), verdict::retryable(7s));
  EXPECT_EQ(backoff::default_classifier{}(pushback_plain_response{503, "9"}),
            verdict::retryable(9s));
  EXPECT_EQ(backoff::default_classifier{}(pushback_plain_response{404, "9"}), verdict::permanent());
}

// --- error codes -----------------------------------------------------------------------------

TEST(ClassifyErrorCode, ARefusedConnectionAndNoLocalAddressProveNothingWasSent) {
  const backoff::default_classifier c;
  EXPECT_EQ(c(make_error_code(std::errc::connection_refused)),
            pushback_verdict(verdict_kind::retryable, {}, false, true));
  EXPECT_EQ(c(std::error_code(ECONNREFUSED, std::system_category())),
            pushback_verdict(verdict_kind::retryable, {}, false, true));
  EXPECT_EQ(c(make_error_code(std::errc::address_not_available)),
            pushback_verdict(verdict_kind::permanent, {}, false, true))
      << "a fact even where the code is not retried";
  for (const std::errc maybe_sent :
       {std::errc::host_unreachable, std::errc::network_unreachable, std::errc::network_down,
        std::errc::connection_reset, std::errc::connection_aborted, std::errc::broken_pipe,
        std::errc::no_buffer_space, std::errc::too_many_files_open}) {
    EXPECT_EQ(c(make_error_code(maybe_sent)), verdict::retryable())
        << make_error_code(maybe_sent).message();
  }
  EXPECT_EQ(c(std::error_code{}), verdict::success());
}

TEST(ClassifyErrorCode, ATimeoutSaysSo) {
  verdict timed_out = verdict::retryable();
  timed_out.timeout = true;
  EXPECT_EQ(backoff::classify_error_code(make_error_code(std::errc::timed_out)), timed_out);
  EXPECT_EQ(backoff::classify_error_code(std::error_code(ETIMEDOUT, std::system_category())),
            timed_out);
  EXPECT_EQ(backoff::classify_error_code(make_error_code(std::errc::stream_timeout)), timed_out);
  EXPECT_FALSE(backoff::classify_error_code(make_error_code(std::errc::interrupted)).timeout);
}

// --- through the retry loop ------------------------------------------------------------------

backoff::retry_policy pushback_constant(duration delay, std::uint32_t max_attempts) {
  return {backoff::backoff_policy::constant(delay), max_attempts, 0s};
}

struct pushback_reply_script {
  std::vector<std::pair<int, retry_headers>> replies;
  std::size_t next = 0;
  int operator()() { return replies.at(next++).first; }
};

// Runs a loop whose attempt n answers replies[n-1], classified by classify_http_reply.
backoff::retry_result<int> pushback_run(recording_env& rec, pushback_reply_script& script,
                                        backoff::retry_policy policy) {
  return backoff::retry([&script] { return script(); },
                        backoff::retry_options{.policy = policy,
                                               .classify =
                                                   [&script](int status) {
                                                     return classify_http_reply(
                                                         status,
                                                         script.replies.at(script.next - 1).second,
                                                         pushback_now);
                                                   }},
                        rec.env);
}

TEST(PushbackInTheLoop, GrpcPushbackSetsTheWait) {
  // grpc-java RetriableStreamTest.pushback: 123 ms, then 4567 * 1000 ms, each waited exactly.
  recording_env rec;
  pushback_reply_script script{
      {{503, grpc_header("123")}, {503, grpc_header("4567000")}, {200, {}}}};
  const auto r = pushback_run(rec, script, pushback_constant(1ms, 5));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{123ms, 4567s}));
}

TEST(PushbackInTheLoop, GrpcPushbackOfOneSecondDelaysTheRetry) {
  // grpc-go test/retry_test.go TestRetryStreaming, "1s server pushback - delayed retry".
  recording_env rec;
  pushback_reply_script script{{{503, grpc_header("1000")}, {200, {}}}};
  const auto r = pushback_run(rec, script, pushback_constant(1ms, 5));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{1s}));
}

TEST(PushbackInTheLoop, ANegativeOrMalformedPushbackEndsTheLoop) {
  // grpc-go test/retry_test.go TestRetryStreaming: negative, non-numeric, multiple values.
  for (const std::string_view stop : {"-1", "xxx", ","}) {
    recording_env rec;
    pushback_reply_script script{{{503, grpc_header(stop)}, {200, {}}}};
    const auto r = pushback_run(rec, script, pushback_constant(1ms, 5));
    EXPECT_EQ(r.why, outcome::permanent) << stop;
    EXPECT_EQ(r.attempts, 1u) << stop;
    EXPECT_TRUE(rec.sleeps.empty()) << stop;
  }
}

TEST(PushbackInTheLoop, AmzRetryAfterAsBotocoreReadsIt) {
  // botocore tests/unit/retries/test_standard_retry_v2_1.py,
  // TestRetryAfterHeaderInRetries.test_x_amz_retry_after_header_is_honored: a 500 on the first
  // attempt, jitter fixed at 1, so the computed backoff is the non-throttling base, 50 ms.
  // Expected delays there: 1500 -> 1.5 s, 0 -> 0.05 s, 10000 -> 5.05 s, invalid -> 0.05 s,
  // -100 -> 0.05 s. The loop waits max(backoff, hint capped at 5 s): the same but for 10000,
  // 5 s here (botocore caps at backoff + 5 s).
  const std::pair<std::string_view, duration> cases[] = {
      {"1500", 1500ms}, {"0", 50ms}, {"10000", 5s}, {"invalid", 50ms}, {"-100", 50ms}};
  for (const auto& [header, wait] : cases) {
    recording_env rec;
    pushback_reply_script script{{{500, amz_header(header)}, {200, {}}}};
    const auto r = pushback_run(rec, script, pushback_constant(50ms, 3));
    EXPECT_EQ(r.why, outcome::succeeded) << header;
    EXPECT_EQ(rec.sleeps, (std::vector<duration>{wait})) << header;
  }
}

// A user's gRPC classifier: UNAVAILABLE before the call left the client is the caller's
// knowledge (gRFC A6, transparent retries), the trailer the server's.
struct pushback_grpc_status {
  int code;                             // 0 OK, 14 UNAVAILABLE, 3 INVALID_ARGUMENT
  bool left_the_client;                 // false: the stream never started
  std::optional<std::string> pushback;  // the grpc-retry-pushback-ms trailer
};

verdict pushback_classify_grpc(const pushback_grpc_status& s) {
  if (s.code == 0) return verdict::success();
  if (s.code != 14) return verdict::permanent();
  verdict v = verdict::retryable();
  v.not_sent = !s.left_the_client;
  if (s.pushback) {
    const std::optional<duration> wait = parse_grpc_retry_pushback(*s.pushback);
    if (!wait) return verdict::permanent();
    v.retry_after = wait;
    v.pushback = true;
  }
  return v;
}

TEST(PushbackInTheLoop, AUsersGrpcClassifierSaysNotSent) {
  EXPECT_EQ(pushback_classify_grpc({14, false, std::nullopt}),
            pushback_verdict(verdict_kind::retryable, {}, false, true));
  EXPECT_EQ(pushback_classify_grpc({14, true, "20"}),
            pushback_verdict(verdict_kind::retryable, 20ms, true, false));
  EXPECT_EQ(pushback_classify_grpc({14, true, "-1"}), verdict::permanent());
  EXPECT_EQ(pushback_classify_grpc({3, true, std::nullopt}), verdict::permanent());
}

}  // namespace
