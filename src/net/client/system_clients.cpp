// SPDX-License-Identifier: Apache-2.0
#include "system_clients.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <string>

namespace backoff::net {
namespace {

// A send this late after its intended time is counted (load's late_after).
constexpr auto late_after = std::chrono::milliseconds(1);

// The key of operation n: what `backoff load --send-key` and the simulator's callers send
// (splitmix64 of its number; a per-key fault takes it mod 1000).
std::string key_of(std::uint64_t operation) {
  return std::to_string(splitmix64(operation));
}

}  // namespace

// One client process of a group: its own guards, in a caller of one call (the group's edge).
struct system_clients::instance {
  instance(std::vector<downstream_spec> calls, loop_executor executor, std::uint64_t seed)
      : caller(std::move(calls), executor, seed) {}
  downstream caller;
};

// Tells the recorder of one operation's attempts, at the time each happens.
class system_clients::counter final : public downstream::attempt_watch {
 public:
  explicit counter(system_clients& owner) : owner_(owner) {}
  void sent() override { owner_.out_.attempt(owner_.since_origin(clock::now())); }
  void failed(bool timed_out) override {
    const systems::time_ns t = owner_.since_origin(clock::now());
    if (timed_out) {
      owner_.out_.timeout(t);
    } else {
      owner_.out_.error(t);
    }
  }

 private:
  system_clients& owner_;
};

system_clients::system_clients(const systems::system_spec& spec, std::size_t strategy,
                               const std::vector<endpoints>& replicas, std::uint64_t seed,
                               report::recorder& out, loop_executor executor)
    : spec_(spec),
      out_(out),
      executor_(executor),
      started_(spec.clients.size(), 0),
      arrivals_rng_(derive_seed(seed, 1)) {
  std::uint64_t stream = 0;
  for (const systems::client_group& g : spec.clients) {
    auto& mine = instances_.emplace_back();
    const systems::service_spec& to = spec.services[g.to];
    for (std::uint32_t i = 0; i < g.instances; ++i) {
      downstream_spec call{.call = {.to = g.to, .edge = g.edge, .latency = g.latency},
                           .to = to.name,
                           .balance = to.balance,
                           .replicas = replicas[g.to],
                           .guards = spec.edge_guards[strategy][g.edge],
                           .options = spec.edge_options_of[strategy][g.edge],
                           .ejection = to.ejection};
      std::vector<downstream_spec> one;
      one.push_back(std::move(call));
      mine.push_back(
          std::make_unique<instance>(std::move(one), executor, derive_seed(seed, 1000 + ++stream)));
    }
  }
}

system_clients::~system_clients() = default;

systems::time_ns system_clients::since_origin(clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_).count();
}

void system_clients::start(clock::time_point origin) {
  origin_ = origin;
  for (std::uint32_t g = 0; g < spec_.clients.size(); ++g) {
    const systems::client_group& group = spec_.clients[g];
    if (group.arrivals == systems::arrival_kind::closed) {
      // A closed group of N users with fewer operations than users starts only those.
      const std::uint64_t users = group.operations > 0
                                      ? std::min<std::uint64_t>(group.users, group.operations)
                                      : group.users;
      for (std::uint64_t u = 0; u < users; ++u) {
        ++sources_;
        boost::asio::co_spawn(executor_, closed_user(g), boost::asio::detached);
      }
    } else {
      ++sources_;
      boost::asio::co_spawn(executor_, open_group(g), boost::asio::detached);
    }
  }
}

void system_clients::stop(clock::time_point end) {
  if (stopping_) return;
  stopping_ = true;
  end_ = end;
  for (auto& group : instances_) {
    for (auto& i : group) i->caller.stop();
  }
}

std::uint64_t system_clients::local_errors() const noexcept {
  std::uint64_t n = 0;
  for (const auto& group : instances_) {
    for (const auto& i : group) n += i->caller.local_errors();
  }
  return n;
}

bool system_clients::done() const noexcept {
  return sources_ == 0 && in_flight_ == 0;
}

// An open group's arrivals, as the simulator draws them: a Poisson process (for a ramp, thinned
// from its highest rate, so that the rate follows the ramp), or evenly spaced. Each operation
// starts at its intended time, in a coroutine of its own, whatever the others do.
task<> system_clients::open_group(std::uint32_t g) {
  const systems::client_group& group = spec_.clients[g];
  const bool ramp = group.arrivals == systems::arrival_kind::ramp;
  const double top = ramp ? std::max(group.rate, group.rate_to) : group.rate;
  const auto rate_at = [&](systems::time_ns t) {
    if (!ramp) return group.rate;
    const double f = std::min(1.0, static_cast<double>(t) / static_cast<double>(group.ramp_over));
    return group.rate + (group.rate_to - group.rate) * f;
  };
  systems::time_ns at = 0;
  timer_type timer(executor_);
  while (!stopping_ && at < spec_.duration &&
         (group.operations == 0 || started_[g] < group.operations)) {
    const clock::time_point intended = origin_ + std::chrono::nanoseconds(at);
    if (clock::now() < intended) {
      if (!co_await wait_until_or_stop(executor_, intended, stopping_)) break;
    }
    const bool accepted = !ramp || uniform01(arrivals_rng_) * top < rate_at(at);
    if (accepted && (at > 0 || !ramp || group.rate > 0)) {
      ++started_[g];
      boost::asio::co_spawn(executor_, operation(g, intended, 0), boost::asio::detached);
    }
    if (top <= 0) break;
    const double gap = group.arrivals == systems::arrival_kind::constant
                           ? 1e9 / top
                           : exponential_variate(arrivals_rng_, 1e9 / top);
    at += std::max<systems::time_ns>(1, static_cast<systems::time_ns>(gap + 0.5));
  }
  --sources_;
}

// A closed group's user: think (first too, with think_first), then one operation, until the
// duration passes or the group has made its operations.
task<> system_clients::closed_user(std::uint32_t g) {
  const systems::client_group& group = spec_.clients[g];
  bool think = group.think_first;
  for (;;) {
    systems::time_ns thought = 0;
    if (think) {
      thought = group.think.sample(arrivals_rng_, 0);
      const auto wake = clock::now() + std::chrono::nanoseconds(thought);
      if (thought > 0 && !co_await wait_until_or_stop(executor_, wake, stopping_)) break;
    }
    think = true;
    if (stopping_ || since_origin(clock::now()) >= spec_.duration) break;
    if (group.operations > 0 && started_[g] >= group.operations) break;
    ++started_[g];
    co_await operation(g, clock::now(), thought);
  }
  --sources_;
}

// One operation: a call through one of the group's instances, drawn at random.
task<> system_clients::operation(std::uint32_t g, clock::time_point intended,
                                 systems::time_ns thought) {
  const systems::client_group& group = spec_.clients[g];
  const std::uint64_t id = operations_++;
  ++in_flight_;
  if (clock::now() - intended > late_after) ++late_sends_;
  const std::uint32_t which =
      group.instances == 1
          ? 0
          : std::min(group.instances - 1,
                     static_cast<std::uint32_t>(uniform01(arrivals_rng_) * group.instances));
  const systems::time_ns started = since_origin(intended);
  out_.operation_started(started);
  counter watch(*this);
  downstream::context from;
  from.key = key_of(id);
  from.watch = &watch;
  if (group.backoff_from_think) from.thought = duration{thought};
  const downstream::result r = co_await instances_[g][which]->caller.call(0, from);
  --in_flight_;
  if (stopping_ && r.why == outcome::cancelled) {
    out_.operation_done(
        {id, started, since_origin(end_), r.attempts, report::op_status::unfinished});
    co_return;
  }
  const systems::time_ns done = since_origin(clock::now());
  out_.operation_done({id, started, done, r.attempts, report::status_of(r.why), r.why});
  if (r.ok) out_.success(done);
}

}  // namespace backoff::net
