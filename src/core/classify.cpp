// SPDX-License-Identifier: Apache-2.0
// The error codes that usually clear by themselves, those that prove nothing was sent, and
// timeouts (classify.hpp's header).
#include "backoff/classify.hpp"

#include <algorithm>
#include <array>

namespace backoff {

verdict classify_error_code(const std::error_code& ec) noexcept {
  if (!ec) return verdict::success();
  // Compared as conditions, so a code of any category equivalent to one of these (the system
  // category's errno values, Boost.Asio's socket errors through Boost.System) counts.
  static constexpr std::array transient{
      std::errc::connection_refused,
      std::errc::connection_reset,
      std::errc::connection_aborted,
      std::errc::timed_out,
      std::errc::stream_timeout,
      std::errc::resource_unavailable_try_again,
      std::errc::operation_would_block,
      std::errc::interrupted,
      std::errc::network_down,
      std::errc::network_unreachable,
      std::errc::network_reset,
      std::errc::host_unreachable,
      std::errc::device_or_resource_busy,
      std::errc::no_buffer_space,
      std::errc::broken_pipe,
      std::errc::too_many_files_open,
      std::errc::too_many_files_open_in_system,
  };
  const bool clears = std::ranges::any_of(transient, [&ec](std::errc c) { return ec == c; });
  verdict v = clears ? verdict::retryable() : verdict::permanent();
  // Only the steps before anything is sent fail so (connect(2), bind(2): nothing listened, or
  // no local address or port was free). An unreachable host may also end a connection that
  // had carried the request (an ICMP error reported on an established socket).
  v.not_sent = ec == std::errc::connection_refused || ec == std::errc::address_not_available;
  v.timeout = ec == std::errc::timed_out || ec == std::errc::stream_timeout;
  return v;
}

}  // namespace backoff
