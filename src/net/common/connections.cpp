// SPDX-License-Identifier: Apache-2.0
#include "net/common/connections.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <cerrno>

#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "backoff/spec.hpp"
#include "net/common/sockets.hpp"

namespace backoff::net {

duration sweep_period(duration shortest) {
  // Not below 10 ms: a sweep walks every connection of its thread, and below 80 ms timeouts
  // nobody sets (the shortest in the tests is 100 ms, whose period is 12.5 ms either way) a
  // finer sweep would only wake the thread more often while idle. serve swept at 10 ms at the
  // least, the proxy at 5; docs/NETWORK.md promises 10.
  return std::clamp<duration>(shortest / 8, std::chrono::milliseconds(10), std::chrono::seconds(1));
}

connection_table::connection_table(const loop_executor& executor, rules r, connection_owner& owner)
    : rules_(r), owner_(owner), sweeper_(executor) {}

void connection_entry::cancel_waits() noexcept {
  boost::system::error_code ignored;
  client->cancel(ignored);
  if (upstream != nullptr) upstream->cancel(ignored);
  if (waiter != nullptr) waiter->cancel();
}

void connection_table::mark_closing(connection_entry& e, connection_entry::ending why) {
  if (e.closing) return;  // counted once, even if a last answer then times out too
  e.closing = why;
  owner_.closed(e, why);
}

task<> connection_table::sweep(duration period) {
  for (;;) {
    sweeper_.expires_after(period);
    const auto [ec] = co_await sweeper_.async_wait(on_loop);
    if (ec || stopping_) co_return;
    const auto now = std::chrono::steady_clock::now();
    for (connection_entry& e : entries_) {
      if (e.lifetime_end <= now) {
        e.lifetime_end = std::chrono::steady_clock::time_point::max();
        mark_closing(e, connection_entry::ending::lifetime);
        reset_connection(*e.client);
        if (e.upstream != nullptr) close_connection(*e.upstream);
        if (e.waiter != nullptr) e.waiter->cancel();
      } else if (e.deadline <= now) {
        e.timed_out = true;
        if (rules_.deadline_closes) mark_closing(e, connection_entry::ending::timeout);
        e.no_deadline();
        e.cancel_waits();
      }
    }
  }
}

bool connection_table::evict_longest_waiting() {
  connection_entry* oldest = nullptr;
  for (connection_entry& e : entries_) {
    const bool waiting =
        e.now == connection_entry::phase::idle || e.now == connection_entry::phase::reading;
    if (waiting && !e.closing && (oldest == nullptr || e.since < oldest->since)) oldest = &e;
  }
  if (oldest == nullptr) return false;
  mark_closing(*oldest, connection_entry::ending::evicted);
  oldest->no_deadline();
  oldest->cancel_waits();
  return true;
}

void connection_table::stop() {
  stopping_ = true;
  sweeper_.cancel();
  boost::system::error_code ignored;
  for (connection_entry& e : entries_) {
    e.client->close(ignored);
    if (e.upstream != nullptr) e.upstream->close(ignored);
    if (e.waiter != nullptr) e.waiter->cancel();
  }
}

listener::listener(acceptor_type& acceptor, connection_table& table, connection_owner& owner,
                   std::atomic<std::int64_t>& open_connections, std::int64_t max_connections)
    : acceptor_(acceptor),
      table_(table),
      owner_(owner),
      open_connections_(open_connections),
      max_connections_(max_connections) {}

task<> listener::run() {
  // Accept errors (out of descriptors, a connection reset before accept) back off with the
  // library's own policy rather than spin: the error usually needs time to clear.
  const backoff_policy policy = parse_policy("exponential(initial=1ms, factor=2, max=1s)");
  backoff_state waits = policy.start();
  random_generator rng(1);
  timer_type pause(acceptor_.get_executor());
  for (;;) {
    auto [error, socket] = co_await acceptor_.async_accept(on_loop);
    if (stopping_ || error == boost::asio::error::operation_aborted) break;
    if (error) {
      // Out of descriptors: make room as at max_connections, then accept again after the pause
      // (the evicted session closes its socket when it next runs).
      if (error == boost::asio::error::no_descriptors || error.value() == ENFILE) {
        table_.evict_longest_waiting();
      }
      pause.expires_after(waits.next_delay(rng));
      co_await pause.async_wait(on_loop);
      continue;
    }
    waits = policy.start();
    owner_.accepted();
    boost::system::error_code ignored;
    if (open_connections_.load() >= max_connections_ && !table_.evict_longest_waiting()) {
      owner_.refused();
      socket.close(ignored);  // over the limit: memory stays bounded, the client retries
      continue;
    }
    socket.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
    boost::asio::co_spawn(acceptor_.get_executor(), serve(std::move(socket)),
                          boost::asio::detached);
  }
}

void listener::stop() {
  stopping_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

task<> listener::serve(socket_type client) {
  const connection_table::handle entry = table_.add(client);
  open_connections_.fetch_add(1);
  co_await owner_.session(client, *entry);
  close_connection(client);
  table_.remove(entry);
  open_connections_.fetch_sub(1);
}

}  // namespace backoff::net
