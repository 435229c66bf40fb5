// SPDX-License-Identifier: Apache-2.0
// An operation's attempts as the library's loops want them: retries (async_retry calls
// attempt_op) or hedged copies (async_hedge calls hedged_copy_op, and judges each copy with
// classify_hedged_reply). Internal to the load client (src/net/client).
//
//   const operation_ref ref{&s, &c, &flight};
//   result = co_await async_retry(attempt_op{&ref}, policy, classify_reply, env, hook, gates);
//   hedged = co_await async_hedge(hedged_copy_op{&ref}, hedge_options{...}, env);
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>

#include "backoff/hedge.hpp"
#include "net/client/attempt.hpp"

namespace backoff::net::load_detail {

// What an operation's attempts need, in the client loop's frame.
struct operation_ref {
  load_state* s;
  connection* c;
  in_flight_op* flight;
};

// One attempt of an operation, as async_retry wants it (a plain function object returning the
// named coroutine's awaitable: GCC 12 mishandles capturing coroutine lambdas). One pointer, not
// three: async_retry's coroutine frame holds a copy, and with three it came to 1032 bytes, just
// past what glibc's per-thread cache serves (1032 with Asio's byte of bookkeeping is a 1040-byte
// allocation): each operation then paid for a trip through malloc's bins.
struct attempt_op {
  const operation_ref* o;
  asio::awaitable<reply> operator()(std::uint32_t attempt) const {
    o->flight->attempts = attempt;
    return send_request(*o->s, *o->c, *o->flight, attempt, attempt_time(*o->s, *o->flight));
  }
};

// A hedged copy's verdict (hedge.hpp): a status answer is judged by the policy's non_fatal list
// (pushback when it carries Retry-After or grpc-retry-pushback-ms); a copy that got no answer at
// all (timeout, refused, reset) is non-fatal, since no server judged the request. A non-fatal
// answer whose grpc-retry-pushback-ms says not to retry stops further copies and lets those in
// flight run, as gRFC A6 has it for hedging: a verdict carrying a wait is the library's way to
// say so (hedge.hpp, "Any pushback").
struct classify_hedged_reply {
  const hedge_policy* policy;
  verdict operator()(const reply& r) const {
    if (r.kind == reply_kind::error && r.status != 0) {
      verdict v = policy->classify_status(r.status, r.retry_after);
      if (v.kind == verdict_kind::retryable && r.do_not_retry) v.retry_after = duration{0};
      v.pushback = v.kind == verdict_kind::retryable && (r.pushback || r.do_not_retry);
      return v;
    }
    return classify_reply(r);
  }
};

// Copy n of a hedged operation: the first on the client's kept-alive connection, the others on
// connections of their own (send_copy, attempt.hpp).
struct hedged_copy_op {
  const operation_ref* o;
  asio::awaitable<reply> operator()(std::uint32_t attempt) const {
    o->flight->attempts = attempt;
    const duration allowed = attempt_time(*o->s, *o->flight);
    return attempt == 1 ? send_request(*o->s, *o->c, *o->flight, attempt, allowed)
                        : send_copy(*o->s, *o->flight, attempt, allowed);
  }
};

}  // namespace backoff::net::load_detail
