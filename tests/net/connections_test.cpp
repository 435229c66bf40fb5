// SPDX-License-Identifier: Apache-2.0
// The connection layer under serve and the proxy (src/net/common/connections.hpp): which
// connection makes room at the cap, what a passed deadline does under each owner's rules, and
// the sweep's period. serve's and the proxy's own tests (server_test.cpp, proxy_test.cpp,
// hostile_http_test.cpp) check the same rules through real connections.
#include "net/common/connections.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <chrono>
#include <vector>

namespace backoff::net {
namespace {

using namespace std::chrono_literals;
using phase = connection_entry::phase;
using ending = connection_entry::ending;

struct counting_owner final : connection_owner {
  task<> session(socket_type&, connection_entry&) override { co_return; }
  void refused() noexcept override { ++refusals; }
  void closed(const connection_entry&, ending why) noexcept override { endings.push_back(why); }

  int refusals = 0;
  std::vector<ending> endings;
};

TEST(ConnectionTable, EvictsTheConnectionThatWaitedLongestOnItsClientNeverOneInService) {
  boost::asio::io_context context;
  counting_owner owner;
  connection_table table(context.get_executor(), {}, owner);
  socket_type in_service(context), half_sent(context), idle(context);
  const auto busy = table.add(in_service);
  const auto reading = table.add(half_sent);
  const auto waiting = table.add(idle);
  const auto now = std::chrono::steady_clock::now();
  busy->enter_busy();
  busy->since = now - 3s;
  reading->now = phase::reading;
  reading->since = now - 2s;
  waiting->now = phase::idle;
  waiting->since = now - 1s;

  EXPECT_TRUE(table.evict_longest_waiting());
  EXPECT_EQ(reading->closing, ending::evicted);
  EXPECT_FALSE(waiting->closing);
  EXPECT_TRUE(table.evict_longest_waiting());  // the one already closing is not picked again
  EXPECT_EQ(waiting->closing, ending::evicted);
  EXPECT_FALSE(table.evict_longest_waiting());
  EXPECT_FALSE(busy->closing);
  EXPECT_EQ(owner.endings, (std::vector<ending>{ending::evicted, ending::evicted}));
}

// Runs the table's sweep for a few periods, then stops it.
void sweep_a_while(boost::asio::io_context& context, connection_table& table) {
  boost::asio::co_spawn(context, table.sweep(10ms), boost::asio::detached);
  context.run_for(50ms);
  table.stop();
  context.run();
}

TEST(ConnectionTable, APassedDeadlineClosesTheConnectionWhenTheRulesSaySo) {
  boost::asio::io_context context;
  counting_owner owner;
  connection_table table(context.get_executor(), {.deadline_closes = true}, owner);
  socket_type client(context);
  const auto entry = table.add(client);
  entry->enter(phase::reading, 1ms);
  sweep_a_while(context, table);
  EXPECT_TRUE(entry->timed_out);
  EXPECT_EQ(entry->closing, ending::timeout);
  EXPECT_EQ(owner.endings, std::vector<ending>{ending::timeout});
}

TEST(ConnectionTable, APassedDeadlineOnlyEndsTheWaitOtherwise) {
  boost::asio::io_context context;
  counting_owner owner;
  connection_table table(context.get_executor(), {.deadline_closes = false}, owner);
  socket_type client(context);
  const auto entry = table.add(client);
  entry->enter_busy();
  entry->expect_within(1ms);
  sweep_a_while(context, table);
  EXPECT_TRUE(entry->timed_out);
  EXPECT_FALSE(entry->closing);
  EXPECT_TRUE(owner.endings.empty());
  entry->expect_within(1s);
  EXPECT_FALSE(entry->timed_out);  // a new deadline starts afresh
}

TEST(ConnectionTable, TheEndOfALifetimeClosesTheConnectionWhateverItWaitsOn) {
  boost::asio::io_context context;
  counting_owner owner;
  connection_table table(context.get_executor(), {.deadline_closes = false}, owner);
  socket_type client(context);
  const auto entry = table.add(client);
  entry->enter_busy();
  entry->lifetime_end = std::chrono::steady_clock::now();
  sweep_a_while(context, table);
  EXPECT_EQ(entry->closing, ending::lifetime);
  EXPECT_FALSE(client.is_open());
}

TEST(SweepPeriod, IsAnEighthOfTheShortestTimeoutWithinTenMillisecondsAndASecond) {
  EXPECT_EQ(sweep_period(100ms), duration(12500us));
  EXPECT_EQ(sweep_period(40ms), duration(10ms));
  EXPECT_EQ(sweep_period(1h), duration(1s));
}

}  // namespace
}  // namespace backoff::net
