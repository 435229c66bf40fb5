// SPDX-License-Identifier: Apache-2.0
// What `backoff load` says while it runs: the seed's rates line every report_every, and a line of
// the HdrHistogram interval log every second. Each log line's histogram is then added into the
// run's (the recorder's), so the summary's percentiles come from the log's counts. Internal to
// the load client (src/net/client).
//
//   asio::co_spawn(*s.context, reporter(s, print), asio::detached);
//   asio::co_spawn(*s.context, histogram_logger(s), asio::detached);   // with histogram_log
//   ...  end_latency_interval(s, end_s);                                // the last, partial one
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>

#include "net/client/load_state.hpp"

namespace backoff::net::load_detail {

// The rates and counts since the last line; the next interval starts now.
interval_report take_interval(load_state& s);

// One line every report_every from the start, on a fixed schedule (deadline k x period, not
// "period after the last line"), so a collapse that keeps the thread busy does not stretch the
// period: a late line covers the time since the one before, and the schedule goes on from the
// next deadline still ahead.
asio::awaitable<void> reporter(load_state& s,
                               const std::function<void(const interval_report&)>& report);

// The latencies since the last interval ended, as one ending at `end_s` (seconds from the start):
// its line of the histogram log when there is one, then into the recorder's histogram; resets
// them.
void end_latency_interval(load_state& s, double end_s);

// One line of the histogram log per second from the start (HdrHistogram's interval log).
asio::awaitable<void> histogram_logger(load_state& s);

}  // namespace backoff::net::load_detail
