// SPDX-License-Identifier: Apache-2.0
// Circuit breakers: the transitions (everything off the closed path), the manual states, and the
// keyed breakers. The configuration's checks and spec text are in breaker_spec.cpp.
#include "backoff/circuit_breaker.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "backoff/keyed_breakers.hpp"

namespace backoff {
namespace {

std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
  if (b > 0 && a > std::numeric_limits<std::int64_t>::max() - b) {
    return std::numeric_limits<std::int64_t>::max();
  }
  return a + b;
}

std::uint64_t ratio_ppm(double ratio) noexcept {
  return static_cast<std::uint64_t>(std::llround(ratio * 1e6));
}

// The longest break: open_max, or the day that bounds `open` when it is not given.
std::int64_t longest_break(const breaker_config& c) noexcept {
  return c.open_max > duration{0} ? c.open_max.count() : duration{std::chrono::hours{24}}.count();
}

duration steady_clock_now() noexcept {
  // As detail::steady_now (retry.cpp), the retry loops' default clock.
  return std::chrono::duration_cast<duration>(std::chrono::steady_clock::now().time_since_epoch());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The window of the last N calls (resilience4j's COUNT_BASED window), lock-free: a ring of N
// one-byte slots (0 empty, else 1 | 2 for a failure | 4 for a slow call) and running counts of
// the failure and slow slots. A call takes the next sequence number and exchanges its outcome
// into that slot; each count moves by the difference between what it wrote and what it
// replaced, so it always equals its slots, whatever order concurrent calls land in. A clear()
// racing a call may leave a count off by that one call until the slot is overwritten; sum()
// clamps them to [0, calls].

class circuit_breaker::call_window {
 public:
  explicit call_window(std::uint32_t size)
      : size_(size), slots_(new std::atomic<std::uint8_t>[size]()) {}

  void add(bool failure, bool slow) noexcept {
    const std::uint64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    const auto value =
        static_cast<std::uint8_t>(1U | (failure ? failed_bit : 0U) | (slow ? slow_bit : 0U));
    const std::uint8_t old = slots_[i % size_].exchange(value, std::memory_order_relaxed);
    move(failures_, value, old, failed_bit);
    move(slow_, value, old, slow_bit);
  }

  counts sum() const noexcept {
    const std::uint64_t calls =
        std::min<std::uint64_t>(next_.load(std::memory_order_relaxed), size_);
    return {calls, clamped(failures_, calls), clamped(slow_, calls)};
  }

  void clear() noexcept {
    for (std::uint32_t i = 0; i < size_; ++i) slots_[i].store(0, std::memory_order_relaxed);
    next_.store(0, std::memory_order_relaxed);
    failures_.store(0, std::memory_order_relaxed);
    slow_.store(0, std::memory_order_relaxed);
  }

 private:
  static constexpr unsigned failed_bit = 2;
  static constexpr unsigned slow_bit = 4;

  static void move(std::atomic<std::int64_t>& count, std::uint8_t written, std::uint8_t replaced,
                   unsigned bit) noexcept {
    const int delta = ((written & bit) != 0 ? 1 : 0) - ((replaced & bit) != 0 ? 1 : 0);
    if (delta != 0) count.fetch_add(delta, std::memory_order_relaxed);
  }
  static std::uint64_t clamped(const std::atomic<std::int64_t>& count,
                               std::uint64_t calls) noexcept {
    const std::int64_t n = count.load(std::memory_order_relaxed);
    return std::min<std::uint64_t>(n < 0 ? 0 : static_cast<std::uint64_t>(n), calls);
  }

  std::uint32_t size_;
  std::unique_ptr<std::atomic<std::uint8_t>[]> slots_;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<std::int64_t> failures_{0};
  std::atomic<std::int64_t> slow_{0};
};

// ---------------------------------------------------------------------------------------------
// The breaker.

circuit_breaker::circuit_breaker(const breaker_config& config, breaker_listener listener)
    : config_((config.validate(), config)),
      listener_(std::move(listener)),
      gates_(config.kind == breaker_kind::consecutive || config.kind == breaker_kind::rate),
      threshold_ppm_(ratio_ppm(config.threshold)),
      open_ns_(config.open.count()),
      open_max_ns_(longest_break(config)),
      slow_ns_(config.slow.count()),
      slow_threshold_ppm_(ratio_ppm(config.slow_threshold)),
      time_window_(config.window_calls > 0 ? duration{1} : config.window),
      slow_window_(config.window_calls > 0 ? duration{1} : config.window),
      calls_(config.window_calls > 0 ? std::make_unique<call_window>(config.window_calls)
                                     : nullptr),
      next_open_ns_(config.open.count()) {}

circuit_breaker::~circuit_breaker() = default;

circuit_breaker::permit circuit_breaker::acquire_slow(duration now, bool first_try,
                                                      std::uint64_t seen) noexcept {
  const std::uint64_t generation = seen >> state_bits;
  switch (state_of(seen)) {
    case breaker_state::forced_open:
      return {false, false, first_try, generation, now};
    case breaker_state::disabled:
      return {true, false, first_try, generation, now};
    case breaker_state::metrics_only:
      if (first_try && config_.kind == breaker_kind::run_ratio) {
        first_tries_.fetch_add(1, std::memory_order_relaxed);
      }
      return {true, false, first_try, generation, now};
    case breaker_state::open:
      // An open breaker refuses without the lock until its time is over.
      if (now.count() < open_until_ns_.load(std::memory_order_relaxed)) {
        return {false, false, first_try, generation, now};
      }
      break;
    case breaker_state::closed:
    case breaker_state::half_open:
      break;
  }
  std::unique_lock lock(mutex_);
  std::uint64_t w = word_.load(std::memory_order_relaxed);
  switch (state_of(w)) {
    case breaker_state::closed:
    case breaker_state::forced_open:
    case breaker_state::disabled:
    case breaker_state::metrics_only:
      // A manual call moved it meanwhile: decide as that state does.
      lock.unlock();
      return try_acquire(now, first_try);
    case breaker_state::open:
      if (now.count() < open_until_ns_.load(std::memory_order_relaxed)) {
        return {false, false, first_try, w >> state_bits, now};
      }
      // The first attempt after the open time half-opens the breaker (resilience4j's default,
      // automaticTransitionFromOpenToHalfOpen off) and is its first trial.
      move_locked(breaker_state::half_open, now);
      w = word_.load(std::memory_order_relaxed);
      break;
    case breaker_state::half_open:
      break;
  }
  if (trials_admitted_ >= config_.half_open) return {false, false, first_try, w >> state_bits, now};
  ++trials_admitted_;
  return {true, true, first_try, w >> state_bits, now};
}

void circuit_breaker::record_trial(duration now, const permit& p, bool failure) noexcept {
  const bool slow = is_slow(now, p);
  std::lock_guard lock(mutex_);
  const std::uint64_t w = word_.load(std::memory_order_relaxed);
  if (w != word_of(p.generation, breaker_state::half_open)) {
    return;  // that half-open episode is over
  }
  if (slow) ++trial_slow_;
  if (config_.trials == half_open_rule::ratio) {
    // jirfag/simulations CircuitBreaker.is_request_allowed: the failure ratio of the half-open
    // calls, once enough of them have answered, against the threshold that opens it; with
    // slow=, resilience4j's HalfOpenState also the slow-call ratio of the same calls.
    ++(failure ? trial_failures_ : trial_successes_);
    const std::uint64_t answered = std::uint64_t{trial_failures_} + trial_successes_;
    if (answered >= config_.half_open) {
      move_locked(rates_open_it({answered, trial_failures_, trial_slow_}) ? breaker_state::open
                                                                          : breaker_state::closed,
                  now);
    }
    return;
  }
  if (failure) {
    move_locked(breaker_state::open, now);
  } else if (++trial_successes_ >= config_.half_open) {
    // All succeeded; with slow=, too many of them slow still reopens it (resilience4j judges
    // the slow-call rate of its permitted half-open calls).
    move_locked(slow_rate_opens_it({trial_successes_, 0, trial_slow_}) ? breaker_state::open
                                                                       : breaker_state::closed,
                now);
  }
}

void circuit_breaker::add_to_window(duration now, bool failure, bool slow) noexcept {
  if (calls_) {
    calls_->add(failure, slow);
    return;
  }
  time_window_.add(now, 1, failure ? 1U : 0U);
  // Only slow calls touch the second window: the fast path writes one slot, as without slow=.
  if (slow) slow_window_.add(now, 1, failure ? 1U : 0U);
}

void circuit_breaker::record_counts(duration now, const permit& p, bool failure) noexcept {
  const std::uint64_t w = word_.load(std::memory_order_acquire);
  const breaker_state s = state_of(w);
  if (s != breaker_state::closed && s != breaker_state::metrics_only) return;
  switch (config_.kind) {
    case breaker_kind::run_ratio:
      // Brooker's should_retry counts every failed attempt, the last one of an operation too.
      if (failure) failed_attempts_.fetch_add(1, std::memory_order_relaxed);
      return;
    case breaker_kind::retry_only:
      // jirfag/simulations counts every attempt, first tries and retries alike.
      add_to_window(now, failure, false);
      return;
    case breaker_kind::rate: {
      if ((w >> state_bits) != p.generation) return;  // admitted by an earlier state
      add_to_window(now, failure, is_slow(now, p));
      if (s != breaker_state::closed) return;  // metrics-only counts but never opens
      const counts c = window_counts(now);
      if (c.calls >= config_.min_calls && rates_open_it(c)) trip(now, w);
      return;
    }
    case breaker_kind::consecutive:
      return;  // inline in record()
  }
}

void circuit_breaker::trip(duration now, std::uint64_t seen) noexcept {
  std::lock_guard lock(mutex_);
  if (word_.load(std::memory_order_relaxed) != seen) return;  // another thread moved it
  move_locked(breaker_state::open, now);
}

void circuit_breaker::clear_counts_locked() noexcept {
  consecutive_.store(0, std::memory_order_relaxed);
  if (calls_) {
    calls_->clear();
  } else {
    time_window_.reset();
    slow_window_.reset();
  }
  first_tries_.store(0, std::memory_order_relaxed);
  failed_attempts_.store(0, std::memory_order_relaxed);
}

void circuit_breaker::move_locked(breaker_state to, duration now) noexcept {
  const std::uint64_t w = word_.load(std::memory_order_relaxed);
  const breaker_state from = state_of(w);
  switch (to) {
    case breaker_state::open:
      open_until_ns_.store(saturating_add(now.count(), next_open_ns_), std::memory_order_relaxed);
      // Polly's BreakDurationGenerator sees HalfOpenAttempts, the half-opens since the last
      // close (CircuitStateController: ++ on half-opening, = 0 on closing): the next break
      // after this one, if no close comes between, is open_growth times longer.
      if (const double grown = static_cast<double>(next_open_ns_) * config_.open_growth;
          grown < static_cast<double>(open_max_ns_)) {
        next_open_ns_ = static_cast<std::int64_t>(grown);
      } else {
        next_open_ns_ = open_max_ns_;
      }
      break;
    case breaker_state::half_open:
      trials_admitted_ = 0;
      trial_successes_ = 0;
      trial_failures_ = 0;
      trial_slow_ = 0;
      break;
    case breaker_state::closed:
    case breaker_state::disabled:
    case breaker_state::metrics_only:
    case breaker_state::forced_open:
      // A fresh start, as resilience4j resets its metrics on closing (the failures that opened
      // the breaker must not open it again) and gives each manual state fresh metrics.
      clear_counts_locked();
      next_open_ns_ = open_ns_;
      break;
  }
  // Release: a thread that sees the new word sees open_until and the cleared counts.
  word_.store(word_of((w >> state_bits) + 1, to), std::memory_order_release);
  if (listener_) listener_(breaker_transition{from, to, now});
}

void circuit_breaker::manual_move(breaker_state to, duration now) noexcept {
  std::lock_guard lock(mutex_);
  if (state_of(word_.load(std::memory_order_relaxed)) != to) move_locked(to, now);
}

void circuit_breaker::force_open(duration now) noexcept {
  manual_move(breaker_state::forced_open, now);
}

void circuit_breaker::disable(duration now) noexcept {
  manual_move(breaker_state::disabled, now);
}

void circuit_breaker::metrics_only(duration now) noexcept {
  manual_move(breaker_state::metrics_only, now);
}

void circuit_breaker::reset(duration now) noexcept {
  std::lock_guard lock(mutex_);
  if (state_of(word_.load(std::memory_order_relaxed)) != breaker_state::closed) {
    move_locked(breaker_state::closed, now);
    return;
  }
  // resilience4j's reset() on a closed breaker: fresh metrics, no transition event.
  clear_counts_locked();
  next_open_ns_ = open_ns_;
}

void circuit_breaker::release(const permit& p) noexcept {
  if (!p.allowed || !p.trial) return;
  std::lock_guard lock(mutex_);
  const std::uint64_t w = word_.load(std::memory_order_relaxed);
  if (w == word_of(p.generation, breaker_state::half_open) && trials_admitted_ > 0) {
    --trials_admitted_;
  }
}

circuit_breaker::counts circuit_breaker::window_counts(duration now) const noexcept {
  if (calls_) return calls_->sum();
  const auto t = time_window_.sum(now);
  if (slow_ns_ == 0) return {t.first, t.second, 0};
  return {t.first, t.second, std::min(t.first, slow_window_.sum(now).first)};
}

bool circuit_breaker::retry_allowed(duration now) const noexcept {
  switch (state_of(word_.load(std::memory_order_acquire))) {
    case breaker_state::forced_open:
      return false;
    case breaker_state::disabled:
    case breaker_state::metrics_only:
      return true;
    case breaker_state::closed:
    case breaker_state::open:
    case breaker_state::half_open:
      break;
  }
  switch (config_.kind) {
    case breaker_kind::retry_only: {
      const counts c = window_counts(now);
      return c.calls > 0 && !at_or_above_threshold(c);
    }
    case breaker_kind::run_ratio: {
      const std::uint64_t first = first_tries_.load(std::memory_order_relaxed);
      const std::uint64_t failed = failed_attempts_.load(std::memory_order_relaxed);
      // retry_sim: no retry when failures / calls > max_rate.
      return first > 0 && failed * 1'000'000 <= threshold_ppm_ * first;
    }
    case breaker_kind::consecutive:
    case breaker_kind::rate:
      break;
  }
  return state(now) != breaker_state::open;
}

breaker_state circuit_breaker::state(duration now) const noexcept {
  const std::uint64_t w = word_.load(std::memory_order_acquire);
  const breaker_state s = state_of(w);
  if (s == breaker_state::open && now.count() >= open_until_ns_.load(std::memory_order_relaxed)) {
    return breaker_state::half_open;
  }
  return s;
}

breaker_state circuit_breaker::state() const noexcept {
  return state(steady_clock_now());
}

std::optional<duration> circuit_breaker::open_remaining(duration now) const noexcept {
  const breaker_state s = state_of(word_.load(std::memory_order_acquire));
  if (s == breaker_state::forced_open) return std::nullopt;
  if (s != breaker_state::open) return duration{0};
  const std::int64_t until = open_until_ns_.load(std::memory_order_relaxed);
  return duration{now.count() >= until ? 0 : until - now.count()};
}

std::optional<duration> circuit_breaker::open_remaining() const noexcept {
  return open_remaining(steady_clock_now());
}

circuit_breaker::counts circuit_breaker::current_counts(duration now) const noexcept {
  switch (config_.kind) {
    case breaker_kind::consecutive: {
      const std::uint64_t n = consecutive_.load(std::memory_order_relaxed);
      return {n, n, 0};
    }
    case breaker_kind::run_ratio:
      return {first_tries_.load(std::memory_order_relaxed),
              failed_attempts_.load(std::memory_order_relaxed), 0};
    case breaker_kind::rate:
    case breaker_kind::retry_only:
      break;
  }
  return window_counts(now);
}

// ---------------------------------------------------------------------------------------------
// Keyed breakers: per shard, a list in order of use (front: the most recent) and an index into
// it by key. The index's keys view the strings in the list's nodes, which never move.

struct keyed_breakers::shard {
  struct entry {
    std::string key;
    std::shared_ptr<circuit_breaker> breaker;
  };
  mutable std::mutex mutex;
  std::list<entry> by_use;
  std::unordered_map<std::string_view, std::list<entry>::iterator> index;
};

keyed_breakers::keyed_breakers(const breaker_config& config, keyed_breaker_listener listener)
    : config_((config.validate(), config)),
      listener_(listener ? std::make_shared<const keyed_breaker_listener>(std::move(listener))
                         : nullptr),
      shard_count_(config.max_keys >= 256 ? 16 : 1),
      shards_(std::make_unique<shard[]>(shard_count_)) {}

keyed_breakers::~keyed_breakers() = default;

keyed_breakers::shard& keyed_breakers::shard_of(std::string_view key) const noexcept {
  if (shard_count_ == 1) return shards_[0];
  // The high bits: the map inside the shard buckets by the low ones.
  const std::size_t h = std::hash<std::string_view>{}(key);
  return shards_[(h >> 48) % shard_count_];
}

bool keyed_breakers::reserve() noexcept {
  std::size_t n = kept_.load(std::memory_order_relaxed);
  while (n < config_.max_keys) {
    if (kept_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

std::shared_ptr<circuit_breaker> keyed_breakers::get(std::string_view key) {
  shard& s = shard_of(key);
  for (;;) {
    {
      std::lock_guard lock(s.mutex);
      if (const auto found = s.index.find(key); found != s.index.end()) {
        s.by_use.splice(s.by_use.begin(), s.by_use, found->second);
        return found->second->breaker;
      }
      if (reserve()) return insert(s, key);
      if (!s.by_use.empty()) {
        evict_idlest(s);  // one out, one in: the count stays at the bound
        return insert(s, key);
      }
    }
    // At the bound, and this key's shard is empty: make room in another shard (one lock at a
    // time, so two threads doing this cannot deadlock), then try again.
    for (std::size_t i = 0; i < shard_count_; ++i) {
      std::lock_guard lock(shards_[i].mutex);
      if (!shards_[i].by_use.empty()) {
        evict_idlest(shards_[i]);
        kept_.fetch_sub(1, std::memory_order_relaxed);
        break;
      }
    }
  }
}

void keyed_breakers::evict_idlest(shard& s) noexcept {
  s.index.erase(s.by_use.back().key);
  s.by_use.pop_back();
}

std::shared_ptr<circuit_breaker> keyed_breakers::insert(shard& s, std::string_view key) {
  breaker_listener on_transition;
  if (listener_) {
    // The breaker may outlive this object (get() hands out shared_ptrs): it keeps the listener.
    on_transition = [listener = listener_, name = std::string(key)](const breaker_transition& t) {
      (*listener)(name, t);
    };
  }
  s.by_use.push_front(
      {std::string(key), std::make_shared<circuit_breaker>(config_, std::move(on_transition))});
  s.index.emplace(s.by_use.front().key, s.by_use.begin());
  return s.by_use.front().breaker;
}

std::shared_ptr<circuit_breaker> keyed_breakers::find(std::string_view key) const {
  shard& s = shard_of(key);
  std::lock_guard lock(s.mutex);
  const auto found = s.index.find(key);
  return found == s.index.end() ? nullptr : found->second->breaker;
}

std::size_t keyed_breakers::size() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard lock(shards_[i].mutex);
    n += shards_[i].by_use.size();
  }
  return n;
}

}  // namespace backoff
