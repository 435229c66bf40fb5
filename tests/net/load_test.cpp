// SPDX-License-Identifier: Apache-2.0
// `backoff load`'s client as a library: which failures are this machine's rather than the
// server's (out of descriptors, buffers or local ports). The end-to-end case, under a low
// `ulimit -n`, is in tests/cli/net_cli_test.cpp.
#include "net/client/load.hpp"

#include <gtest/gtest.h>

#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <cerrno>

namespace {

using backoff::net::is_local_error;

boost::system::error_code system_error(int e) {
  return {e, boost::system::system_category()};
}

TEST(Load, OutOfDescriptorsBuffersOrPortsIsALocalError) {
  for (const int e : {EMFILE, ENFILE, ENOBUFS, ENOMEM, EADDRNOTAVAIL}) {
    EXPECT_TRUE(is_local_error(system_error(e))) << e;
  }
}

TEST(Load, RefusalsResetsAndTimeoutsAreTheServers) {
  for (const int e : {ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT, EHOSTUNREACH}) {
    EXPECT_FALSE(is_local_error(system_error(e))) << e;
  }
  EXPECT_FALSE(is_local_error(boost::asio::error::eof));
  EXPECT_FALSE(is_local_error(boost::beast::error::timeout));
}

}  // namespace
