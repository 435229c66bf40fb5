// SPDX-License-Identifier: Apache-2.0
// The retry tool's one way to turn a failed system call into an exception: errno, with what was
// being done.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>

namespace backoff::tool {

[[noreturn]] inline void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace backoff::tool
