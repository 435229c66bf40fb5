// SPDX-License-Identifier: Apache-2.0
// One attempt of `backoff load`'s client on a connection: connect if needed, write the request,
// read the answer, within the time the attempt is allowed, counted in the run's recorder and
// counters. Internal to the load client (src/net/client).
//
//   const duration allowed = attempt_time(s, flight);   // the timeout, cut to the deadline
//   const reply r = co_await send_request(s, c, flight, attempt, allowed);
//   verdict v = classify_reply(r);
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>

#include "backoff/duration.hpp"
#include "net/client/load_state.hpp"

namespace backoff::net::load_detail {

// The time an attempt of `op` may take: the timeout, cut to what is left before the operation's
// deadline.
duration attempt_time(const load_state& s, const in_flight_op& op);

// Attempt number `attempt` of `op` on `c`, connect, write and read together within
// `time_allowed`, as Go's client does. The request carries what the simulator's callers send:
// after the operation's first attempt, how long ago that one left (x-backoff-since-first-attempt),
// and with send_key the operation's key (x-backoff-key); with propagate_deadline, its time and
// number.
asio::awaitable<reply> send_request(load_state& s, connection& c, in_flight_op& op,
                                    std::uint32_t attempt, duration time_allowed);

// Attempt `attempt` (a hedged copy) on a connection of its own, closed when it ends.
asio::awaitable<reply> send_copy(load_state& s, in_flight_op& op, std::uint32_t attempt,
                                 duration time_allowed);

// The key the simulator's callers send for operation number `id` (x-backoff-key): splitmix64 of
// it (random.hpp), as the system model's operation_key mixes an operation's id.
std::uint64_t operation_key(std::uint64_t id);

}  // namespace backoff::net::load_detail
