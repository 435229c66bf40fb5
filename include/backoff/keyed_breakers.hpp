// SPDX-License-Identifier: Apache-2.0
// One circuit breaker per key (a host, a shard, a user), a bounded number of them. A breaker per
// service turns a partial outage into a full one: when one shard of ten fails, a shared breaker
// opens on the failures of that shard and then refuses the calls to the nine that work (Brooker,
// "Will circuit breakers solve my problems?", 2022-02-16). Keyed by what fails together, each
// breaker sees only its own dependency.
//
//   backoff::keyed_breakers breakers{backoff::parse_breaker(
//       "breaker(kind=consecutive, failures=5, open=5s, half_open=1, keyed=true, max_keys=1000)")};
//   std::shared_ptr<backoff::circuit_breaker> b = breakers.get(host);  // same key, same breaker
//   const auto permit = b->try_acquire(now(), /*first_try=*/true);
//
// Eviction: at most config.max_keys breakers are kept. A key seen for the first time when that
// many are kept evicts the one used least recently (every get() counts as a use), so it is the
// idle breakers that go; a busy key's breaker, open or not, stays. An evicted key that comes
// back starts over with a fresh closed breaker. Below 256 keys the order is exact. From 256 on,
// the keys are spread over 16 shards by hash, each with its own lock, so that threads looking up
// different keys rarely wait for each other; the bound is still exact (one count across the
// shards), but the breaker evicted is the least recently used of the new key's shard (of
// another shard when that one is empty): the idlest of about a sixteenth of the keys.
//
// Every key's breaker is made from the whole config (slow calls, a growing break and all);
// manual states are per key: breakers.get(host)->force_open(now) isolates that host alone.
//
// get() returns a shared_ptr: a breaker evicted while a caller still holds it stays valid for
// that caller (its results are then counted by a breaker no one else sees). Thread-safe: every
// member may be called concurrently. A lookup that finds its key allocates nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include "backoff/circuit_breaker.hpp"
#include "backoff/export.hpp"

namespace backoff {

// Told of every transition of every key's breaker, with its key (as circuit_breaker's listener:
// under that breaker's transition lock, must not throw).
using keyed_breaker_listener = std::function<void(std::string_view key, const breaker_transition&)>;

class BACKOFF_EXPORT keyed_breakers {
 public:
  // Throws parse_error when config does not validate. config.keyed need not be set; its
  // max_keys is the bound either way.
  explicit keyed_breakers(const breaker_config& config, keyed_breaker_listener listener = {});
  ~keyed_breakers();
  keyed_breakers(const keyed_breakers&) = delete;
  keyed_breakers& operator=(const keyed_breakers&) = delete;

  // The key's breaker, made (and maybe another evicted) when the key is not kept.
  std::shared_ptr<circuit_breaker> get(std::string_view key);
  // The key's breaker when it is kept, else null; does not count as a use.
  std::shared_ptr<circuit_breaker> find(std::string_view key) const;
  // The breakers kept now.
  std::size_t size() const;

  const breaker_config& config() const noexcept { return config_; }

 private:
  struct shard;

  shard& shard_of(std::string_view key) const noexcept;
  bool reserve() noexcept;  // one more kept breaker, if under the bound
  static void evict_idlest(shard& s) noexcept;
  std::shared_ptr<circuit_breaker> insert(shard& s, std::string_view key);

  breaker_config config_;
  std::shared_ptr<const keyed_breaker_listener> listener_;
  std::size_t shard_count_;
  std::unique_ptr<shard[]> shards_;
  std::atomic<std::size_t> kept_{0};  // breakers kept, across shards
};

}  // namespace backoff
