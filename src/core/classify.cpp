// SPDX-License-Identifier: Apache-2.0
// The error codes that usually clear by themselves (classify.hpp's header).
#include "backoff/classify.hpp"

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
  for (const std::errc condition : transient) {
    if (ec == condition) return verdict::retryable();
  }
  return verdict::permanent();
}

}  // namespace backoff
