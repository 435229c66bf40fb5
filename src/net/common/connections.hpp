// SPDX-License-Identifier: Apache-2.0
// The connection layer under `backoff serve` and `backoff proxy` (STYLE.md's three layers: a pure
// handler, a per-connection session, and this: the accept loop and the table of connections).
// Each owns one listener and one connection_table per thread; what differs between the two comes
// in through connection_owner (the session, what is counted) and connection_table::rules.
//
//   struct worker : connection_owner {               // serve's or the proxy's per-thread state
//     task<> session(socket_type& client, connection_entry& entry) override;
//     void refused() noexcept override;              // counted before the close
//     void closed(const connection_entry&, connection_entry::ending) noexcept override;
//   };
//   connection_table table(ex, {.deadline_closes = true}, w);
//   listener accept(acceptor, table, w, open_connections, max_connections);
//   co_spawn(ex, accept.run(), detached);  co_spawn(ex, table.sweep(period), detached);
//   ... in a session, around each wait on a peer:
//   entry.enter(connection_entry::phase::reading, header_timeout);   // or expect_within()
//   co_await ...;  if (entry.closing) ...                          // the table closed it
//   ... to stop (on the loop's thread): accept.stop();  table.stop();
//
// Deadlines are swept, not timed one by one: no timer or coroutine frame per request on the hot
// path; a connection is closed at most one sweep period after its deadline (sweep_period()).
// At max_connections, or when accept fails for want of descriptors, the connection that has waited
// longest on its client (idle, or a request header begun and not finished) makes room: otherwise a
// client that sends one byte on each of max_connections connections holds the server for the whole
// header timeout. Connections in service are never evicted.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <optional>

#include "backoff/duration.hpp"
#include "net/common/loop.hpp"

namespace backoff::net {

// What the table knows of one connection. The session keeps `now` and `deadline` current (a
// deadline while it waits on a peer, none while it waits on purpose); the table sets `timed_out`
// and `closing`, and cancels the waits it can see (client, upstream, waiter).
struct connection_entry {
  enum class phase {
    idle,     // waiting for a request, no byte of it yet: may make room for a new connection
    reading,  // a request header begun and not finished: may make room too
    writing,  // an answer the client has not taken yet
    busy,     // a request in service, forwarded or answered: never evicted
  };
  // Why the table closed it.
  enum class ending {
    timeout,   // its deadline passed (when the rules say that closes it)
    evicted,   // it made room for a new connection
    lifetime,  // lifetime_end passed: reset (the proxy's reset_peer toxic)
  };

  explicit connection_entry(socket_type& c) : client(&c) {}

  socket_type* client;
  socket_type* upstream = nullptr;  // the proxy's connection to its server, while it has one
  timer_type* waiter = nullptr;     // a timer the session waits on on purpose
  phase now = phase::idle;
  std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();  // `now` began
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::chrono::steady_clock::time_point lifetime_end = std::chrono::steady_clock::time_point::max();
  bool timed_out = false;         // the latest deadline passed
  std::optional<ending> closing;  // set once, when the table closes it

  void enter(phase p) {
    now = p;
    since = std::chrono::steady_clock::now();
  }
  // A phase of waiting on the client, with its deadline (one clock read for both).
  void enter(phase p, duration timeout) {
    enter(p);
    deadline = saturating_add(since, timeout);
    timed_out = false;
  }
  void enter_busy() {
    now = phase::busy;
    no_deadline();
  }
  void expect_within(duration timeout) {
    expect_by(saturating_add(std::chrono::steady_clock::now(), timeout));
  }
  void expect_by(std::chrono::steady_clock::time_point t) {
    deadline = t;
    timed_out = false;
  }
  void no_deadline() { deadline = std::chrono::steady_clock::time_point::max(); }
  // Cancels the operations pending on client, upstream and waiter: each completes with
  // operation_aborted, and the session sees why in timed_out or closing.
  void cancel_waits() noexcept;
};

// What serve and the proxy give the connection layer: the session of one connection, and the
// counting of what the layer does to connections. Called on the loop's thread.
class connection_owner {
 public:
  // Reads and answers requests on `client` until the connection ends; the layer closes the socket
  // and forgets the entry afterwards.
  virtual task<> session(socket_type& client, connection_entry& entry) = 0;
  // A connection accepted (before the check of max_connections).
  virtual void accepted() noexcept {}
  // A connection closed at once at max_connections: called before the close, so whoever sees
  // the connection end also sees the count.
  virtual void refused() noexcept = 0;
  // The table closed `entry` (called once per connection, before its waits are cancelled).
  virtual void closed(const connection_entry& entry, connection_entry::ending why) noexcept = 0;

 protected:
  ~connection_owner() = default;
};

// How often the deadlines of connections whose shortest timeout is `shortest` are swept: an
// eighth of it, at least 10 ms and at most 1 s, so a connection is closed between its timeout and
// an eighth (or a second) later.
duration sweep_period(duration shortest);

// One thread's connections: their deadlines, the sweep, eviction and stop. Oldest first.
class connection_table {
 public:
  struct rules {
    // Whether a passed deadline closes the connection (serve: a client too slow to send a request
    // or take an answer is done with) or only ends the wait it was set for (the proxy: an
    // upstream too slow gets the client a 504, and the client's connection goes on).
    bool deadline_closes = true;
  };
  using handle = std::list<connection_entry>::iterator;

  connection_table(const loop_executor& executor, rules r, connection_owner& owner);

  handle add(socket_type& client) { return entries_.emplace(entries_.end(), client); }
  void remove(handle h) { entries_.erase(h); }
  std::size_t size() const noexcept { return entries_.size(); }

  // Every `period` until stop(): connections past their lifetime_end are reset, those past their
  // deadline have their waits cancelled (closed, under deadline_closes).
  task<> sweep(duration period);
  // Closes the connection that has waited longest on its client (idle or reading); false when
  // every connection is busy or being answered.
  bool evict_longest_waiting();
  // Ends the sweep and closes every connection (their sessions see their waits fail).
  void stop();

 private:
  // Sets `closing` and counts it, once per connection.
  void mark_closing(connection_entry& e, connection_entry::ending why);

  rules rules_;
  connection_owner& owner_;
  timer_type sweeper_;
  std::list<connection_entry> entries_;
  bool stopping_ = false;
};

// One thread's accept loop: accepts until stop(), backing off on accept errors with the
// library's own policy instead of spinning; at max_connections (counted in open_connections, which
// several threads may share) a new connection takes the place of the longest waiting one, or is
// closed at once. Each accepted connection gets a session frame that registers it in the table.
class listener {
 public:
  listener(acceptor_type& acceptor, connection_table& table, connection_owner& owner,
           std::atomic<std::int64_t>& open_connections, std::int64_t max_connections);

  task<> run();
  void stop();  // closes the acceptor

 private:
  task<> serve(socket_type client);

  acceptor_type& acceptor_;
  connection_table& table_;
  connection_owner& owner_;
  std::atomic<std::int64_t>& open_connections_;
  std::int64_t max_connections_;
  bool stopping_ = false;
};

}  // namespace backoff::net
