// SPDX-License-Identifier: Apache-2.0
// The async window's bookkeeping: which lane each turn of the aimd_window goes to.
//
// The window's queue is a stack of failed requests (its top is the front) and the never-sent
// ids behind it. Here `stack` mirrors the failed stack entry for entry, with the lane that owns
// each id (or none), and `fresh` lists the lanes never sent, in join order. So before each
// try_send we know what it will return: the top of `stack` if any, else a never-sent id, which
// goes to the first lane of `fresh` (those ids are interchangeable; `surplus` counts the ones
// no lane waits for, and try_send is not called for them).
//
// Each turn (send_ticket) is, at a given moment, of one of two kinds, by aimd_window::on_error's
// own rule with C cuts so far, the turn handed out after c0 cuts, and L the last cut its request
// was in flight at (the mirror keeps L: after on_error, it is the window's cut count):
//   - its error would be ignored (c0 < C, or L == C > 0): on_error(requeue::no) changes nothing
//     but the count of ignored errors, so a turn nobody will use is given back that way;
//   - otherwise it behaves exactly as a never-sent request's turn handed out now (c0 == C and
//     L != C; a later cut makes both ignored). Such a turn nobody will use can go to the next
//     lane in line that is of the same kind, and nothing the window computes changes.
// Ids are pushed onto the stack in time order and L is the cut count at the push, so L never
// decreases from the bottom of the stack to the top: below a turn of the second kind, all are.
//
// With aimd_window as it is, a queued resend is in fact never of the second kind: within one cut
// count, once a send has been made, flying < cwnd + 1 holds (cwnd only grows until the next
// cut), so every error leaves room and the pump hands the resend out at once; before that first
// send every request in flight predates the cut, so no error can cut again. The branches for
// stale resends below are kept so that the bookkeeping stays exact if that ever changes; a
// never-sent lane's unused turn (the second kind) does happen and is tested.
#include "backoff/async_window.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <list>
#include <stdexcept>
#include <string>
#include <vector>

namespace backoff {

namespace asio = boost::asio;

namespace detail {

enum class lane_phase : std::uint8_t {
  fresh,     // never sent; in core.fresh
  stacked,   // failed, its id in core.stack, waiting for its resend
  ticketed,  // a turn is handed to it, not yet taken by acquire
  flying,    // acquire returned true; a report is due
  left,      // succeeded or gave up
};

struct lane_state {
  explicit lane_state(std::shared_ptr<window_core> c) : core(std::move(c)) {}

  std::shared_ptr<window_core> core;
  lane_phase phase = lane_phase::fresh;
  std::list<lane_state*>::iterator fresh_pos;  // when fresh
  std::size_t stack_pos = 0;                   // when stacked
  std::optional<send_ticket> ticket;           // when ticketed or flying
  std::uint64_t ticket_cuts = 0;               // cuts when the ticket was handed out (c0)
  std::uint64_t ticket_last_cut = 0;           // its L (0: never in flight at a cut)
  bool ticket_resend = false;
  std::optional<request_id> request;
  asio::steady_timer* waker = nullptr;  // the timer a waiting acquire sleeps on
};

struct window_core {
  struct stacked {
    request_id id;
    std::uint64_t last_cut;  // L
    lane_state* owner;       // nullptr: its lane has left
  };

  window_core(async_window::executor_type ex, const aimd_config& config)
      : executor(std::move(ex)), window(config) {}

  async_window::executor_type executor;
  aimd_window window;
  std::list<lane_state*> fresh;
  std::uint64_t surplus = 0;  // never-sent ids in the window's queue that no lane waits for
  std::vector<stacked> stack;
  std::function<void(const async_window::send_event&)> observer;

  std::size_t lanes = 0;
  std::size_t waiting = 0;
  std::uint64_t sends = 0;
  std::uint64_t resends = 0;
  std::uint64_t released = 0;
  std::uint64_t passed = 0;

  bool pumping = false;
  bool pump_again = false;

  std::uint64_t cuts() const noexcept { return window.snapshot().cuts; }

  // aimd_window::on_error's test, on the mirror: the window's own rule, not a copy.
  static bool would_be_ignored(std::uint64_t c0, std::uint64_t last_cut, std::uint64_t cuts) {
    return aimd_window::error_ignored(c0, last_cut, cuts);
  }

  std::optional<send_ticket> try_send(const std::optional<request_id>& expected) {
    auto t = window.try_send();
    if (t && expected && t->request() != *expected) {
      throw std::logic_error("async_window: the window handed out request " +
                             std::to_string(t->request()) + ", expected " +
                             std::to_string(*expected) + " (was it used directly?)");
    }
    return t;
  }

  void hand(lane_state& lane, const send_ticket& t, std::uint64_t c0, std::uint64_t last_cut,
            bool resend) {
    lane.ticket = t;
    lane.ticket_cuts = c0;
    lane.ticket_last_cut = last_cut;
    lane.ticket_resend = resend;
    lane.request = t.request();
    lane.phase = lane_phase::ticketed;
    ++sends;
    if (resend) ++resends;
    if (observer) observer(async_window::send_event{t.request(), resend, window.snapshot()});
    if (lane.waker != nullptr) lane.waker->cancel();
  }

  // Takes `lane` out of its place in line; its queued id is left unowned.
  void unlink(lane_state& lane) {
    if (lane.phase == lane_phase::fresh) {
      fresh.erase(lane.fresh_pos);
      ++surplus;
    } else if (lane.phase == lane_phase::stacked) {
      stack[lane.stack_pos].owner = nullptr;
    }
  }

  // The first lane in line below stack index `below` (exclusive), skipping unowned ids.
  lane_state* next_in_line(std::size_t below) const {
    for (std::size_t i = below; i-- > 0;) {
      if (stack[i].owner != nullptr) return stack[i].owner;
    }
    return fresh.empty() ? nullptr : fresh.front();
  }

  bool fresh_equivalent(const lane_state& lane, std::uint64_t c) const {
    return lane.phase == lane_phase::fresh ||
           (lane.phase == lane_phase::stacked && stack[lane.stack_pos].last_cut < c);
  }

  // A turn whose lane left without using it.
  void release(const send_ticket& t, std::uint64_t c0, std::uint64_t last_cut, bool resend) {
    const std::uint64_t c = cuts();
    if (would_be_ignored(c0, last_cut, c)) {
      window.on_error(t, aimd_window::requeue::no);
      ++released;
      return;
    }
    lane_state* next = next_in_line(stack.size());
    if (next != nullptr && fresh_equivalent(*next, c)) {
      unlink(*next);
      ++passed;
      hand(*next, t, c0, last_cut, resend);
      return;
    }
    window.on_success(t);
    ++released;
  }

  // Hands out turns while the window has room and someone can take them.
  void pump() {
    if (pumping) {
      pump_again = true;
      return;
    }
    pumping = true;
    struct reset {
      window_core* core;
      ~reset() { core->pumping = false; }
    } guard{this};
    do {
      pump_again = false;
      pump_once();
    } while (pump_again);
  }

  void pump_once() {
    for (;;) {
      if (!stack.empty()) {
        const stacked top = stack.back();
        if (top.owner != nullptr) {
          const auto t = try_send(top.id);
          if (!t) return;
          stack.pop_back();
          hand(*top.owner, *t, cuts(), top.last_cut, true);
          continue;
        }
        const std::uint64_t c = cuts();
        if (would_be_ignored(c, top.last_cut, c)) {
          // Unowned, and its error would be ignored: take it out at no cost.
          const auto t = try_send(top.id);
          if (!t) return;
          stack.pop_back();
          window.on_error(*t, aimd_window::requeue::no);
          ++released;
          continue;
        }
        // Unowned and worth a fresh send: its turn goes to the next lane in line, all of whose
        // turns are of the same kind (the L order above).
        lane_state* next = next_in_line(stack.size() - 1);
        if (next == nullptr) return;  // nobody waits; leave it queued
        const auto t = try_send(top.id);
        if (!t) return;
        stack.pop_back();
        unlink(*next);
        ++passed;
        hand(*next, *t, c, top.last_cut, true);
        continue;
      }
      if (fresh.empty()) return;  // only unowned never-sent ids, if any, are queued
      const auto t = try_send(std::nullopt);
      if (!t) return;
      lane_state* next = fresh.front();
      fresh.pop_front();
      hand(*next, *t, cuts(), 0, false);
    }
  }

  void join(lane_state& lane) {
    if (surplus > 0) {
      --surplus;  // take over an id a lane left in the queue
    } else {
      window.enqueue(1);
    }
    lane.phase = lane_phase::fresh;
    lane.fresh_pos = fresh.insert(fresh.end(), &lane);
    ++lanes;
    pump();
  }

  void leave(lane_state& lane) {
    const lane_phase was = lane.phase;
    if (was == lane_phase::left) return;
    unlink(lane);
    lane.phase = lane_phase::left;
    --lanes;
    if (was == lane_phase::flying) {
      window.on_error(*lane.ticket, aimd_window::requeue::no);
    } else if (was == lane_phase::ticketed) {
      release(*lane.ticket, lane.ticket_cuts, lane.ticket_last_cut, lane.ticket_resend);
    }
    lane.ticket.reset();
    if (lane.waker != nullptr) lane.waker->cancel();
    pump();
  }

  void success(lane_state& lane) {
    if (lane.phase != lane_phase::flying) {
      throw std::logic_error("async_window: success() without a send in flight");
    }
    window.on_success(*lane.ticket);
    lane.ticket.reset();
    lane.phase = lane_phase::left;
    --lanes;
    pump();
  }

  void failure(lane_state& lane) {
    if (lane.phase != lane_phase::flying) {
      throw std::logic_error("async_window: failure() without a send in flight");
    }
    const request_id id = lane.ticket->request();
    window.on_error(*lane.ticket, aimd_window::requeue::yes);
    lane.ticket.reset();
    lane.phase = lane_phase::stacked;
    lane.stack_pos = stack.size();
    stack.push_back({id, cuts(), &lane});
    pump();
  }

  async_window::stats statistics() const noexcept {
    std::size_t stacked_lanes = 0;
    for (const stacked& s : stack) stacked_lanes += s.owner != nullptr ? 1 : 0;
    return {lanes,   fresh.size() + stacked_lanes,
            waiting, sends,
            resends, released,
            passed,  surplus + (stack.size() - stacked_lanes)};
  }
};

namespace {

// Registers a waiting acquire's timer with its lane for as long as the acquire's frame waits,
// including when the frame is destroyed while suspended.
struct waker_registration {
  lane_state& lane;
  waker_registration(lane_state& l, asio::steady_timer& timer) : lane(l) {
    lane.waker = &timer;
    ++lane.core->waiting;
  }
  waker_registration(const waker_registration&) = delete;
  waker_registration& operator=(const waker_registration&) = delete;
  ~waker_registration() {
    lane.waker = nullptr;
    --lane.core->waiting;
  }
};

asio::awaitable<void> wait_for_wake(std::shared_ptr<lane_state> lane) {
  asio::steady_timer timer{lane->core->executor, asio::steady_timer::time_point::max()};
  const waker_registration registration{*lane, timer};
  // Ends when the window cancels the timer (a turn, or the lane left) or the coroutine's
  // cancellation slot fires; the caller looks at which.
  [[maybe_unused]] const auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

// lane::acquire (below) is the plain function that starts this coroutine, with a copy of its
// lane's state taken by value: async_retry.hpp's rule ("GCC before 13"), which every async API
// here follows.
// The co_awaits are statements of their own: GCC 12.2 miscompiles
// `if ((co_await asio::this_coro::cancellation_state).cancelled() != ...)` (and the same as a
// function's argument): the coroutine later resumes at a corrupt index and dies of SIGILL.
asio::awaitable<bool> acquire_turn(std::shared_ptr<lane_state> lane) {
  if (!lane) co_return false;
  if (lane->phase == lane_phase::flying) {
    throw std::logic_error("async_window: acquire() before the last send was reported");
  }
  if (lane->waker != nullptr) {
    throw std::logic_error("async_window: another acquire() of this lane is waiting");
  }
  const asio::cancellation_state cancellation = co_await asio::this_coro::cancellation_state;
  bool turn = false;
  for (;;) {
    if (lane->phase == lane_phase::left) break;
    if (cancellation.cancelled() != asio::cancellation_type::none) break;
    if (lane->phase == lane_phase::ticketed) {
      lane->phase = lane_phase::flying;
      turn = true;
      break;
    }
    co_await wait_for_wake(lane);
  }
  co_return turn;
}

}  // namespace
}  // namespace detail

async_window::async_window(executor_type executor, const aimd_config& config)
    : core_(std::make_shared<detail::window_core>(std::move(executor), config)) {}

async_window::~async_window() = default;

async_window::lane async_window::join() {
  auto state = std::make_shared<detail::lane_state>(core_);
  core_->join(*state);
  return lane{std::move(state)};
}

async_window::executor_type async_window::get_executor() const noexcept {
  return core_->executor;
}

const aimd_window& async_window::window() const noexcept {
  return core_->window;
}

async_window::stats async_window::statistics() const noexcept {
  return core_->statistics();
}

void async_window::observe(std::function<void(const send_event&)> observer) {
  core_->observer = std::move(observer);
}

async_window::lane& async_window::lane::operator=(lane&& other) noexcept {
  if (this != &other) {
    give_up();
    state_ = std::move(other.state_);
  }
  return *this;
}

async_window::lane::~lane() {
  give_up();
}

asio::awaitable<bool> async_window::lane::acquire() {
  return detail::acquire_turn(state_);
}

void async_window::lane::success() {
  if (!state_) throw std::logic_error("async_window: success() on an empty lane");
  state_->core->success(*state_);
}

void async_window::lane::failure() {
  if (!state_) throw std::logic_error("async_window: failure() on an empty lane");
  state_->core->failure(*state_);
}

void async_window::lane::give_up() {
  if (state_) state_->core->leave(*state_);
}

bool async_window::lane::joined() const noexcept {
  return state_ && state_->phase != detail::lane_phase::left;
}

bool async_window::lane::in_flight() const noexcept {
  return state_ && state_->phase == detail::lane_phase::flying;
}

bool async_window::lane::ready() const noexcept {
  return state_ && state_->phase == detail::lane_phase::ticketed;
}

std::optional<request_id> async_window::lane::request() const noexcept {
  return state_ ? state_->request : std::nullopt;
}

}  // namespace backoff
