// SPDX-License-Identifier: Apache-2.0
// A replica's door and seats (systems/replica_gate.hpp), which a real tier asks on its own clock:
// the accept limit, admission, workers under a capacity fault, the queue and CoDel's drop. Every
// expected value is worked out by hand from docs/SYSTEMS.md's rules.
#include "systems/replica_gate.hpp"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <memory>
#include <string>

#include "config/config_reader.hpp"

namespace replica_gate_test {

namespace systems = backoff::systems;
using systems::door;
constexpr systems::time_ns ms = 1'000'000;

// The service `api` of a one-service system file whose [service.api] table is `service`.
systems::service_spec service_of(const std::string& service) {
  const std::string text = "[service.api]\n" + service +
                           "\n[[clients]]\nto = \"api\"\narrivals = \"poisson(rate=10)\"\n"
                           "edge = \"front\"\n[edge.front]\nmax_attempts = 1\n";
  auto root = std::make_shared<toml::table>(toml::parse(text, std::string_view{"gate.toml"}));
  backoff::config::config_reader keys{root, "gate.toml", {}};
  return systems::read_system(keys).services.at(0);
}

TEST(ReplicaGate, TheAcceptLimitCountsRequestsHeldAndRefusesBeyondIt) {
  const auto s = service_of("max_connections = 2\nworkers = 1");
  systems::replica_gate gate{s};
  systems::admission_ticket a, b, c;
  EXPECT_EQ(gate.arrive(0, a), door::in);
  EXPECT_EQ(gate.arrive(0, b), door::in);  // held in the queue, not on a worker: still held
  EXPECT_EQ(gate.arrive(0, c), door::refused);
  EXPECT_EQ(gate.held(), 2u);
  gate.leave(a, 1 * ms, true, false);
  EXPECT_EQ(gate.arrive(1 * ms, c), door::in);
}

TEST(ReplicaGate, AConcurrencyLimitShedsWithoutHoldingAndFreesOnLeave) {
  const auto s = service_of("limit = \"concurrency(max=1)\"");
  systems::replica_gate gate{s};
  systems::admission_ticket a, b;
  EXPECT_EQ(gate.arrive(0, a), door::in);
  EXPECT_EQ(gate.admission_limit(), 1u);
  EXPECT_EQ(gate.arrive(0, b), door::shed);
  EXPECT_EQ(gate.held(), 1u);  // the shed one holds nothing
  gate.leave(a, 1 * ms, true, false);
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(gate.arrive(1 * ms, b), door::in);
}

TEST(ReplicaGate, FifoSeatsTheOldestWhenAWorkerFrees) {
  const auto s = service_of("workers = 2\nqueue = 2");
  systems::replica_gate gate{s};
  EXPECT_TRUE(gate.seat(0));
  EXPECT_TRUE(gate.seat(0));
  EXPECT_FALSE(gate.seat(0));
  gate.wait(7, 1 * ms);
  gate.wait(8, 2 * ms);
  EXPECT_TRUE(gate.queue_full());
  EXPECT_FALSE(gate.next(3 * ms));  // both workers busy
  systems::admission_ticket none;
  gate.leave(none, 4 * ms, true, true);
  const auto next = gate.next(4 * ms);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->id, 7u);
  EXPECT_FALSE(next->dropped);
  EXPECT_EQ(gate.busy(), 2u);
  EXPECT_FALSE(gate.next(4 * ms));
  EXPECT_EQ(gate.queued(), 1u);
}

TEST(ReplicaGate, ACapacityFaultTakesWorkersAwayForItsWindow) {
  const auto s = service_of(
      "workers = 5\nfaults = [{ at = \"1s\", for = \"2s\", fault = \"capacity(share=50%)\" }]");
  const systems::replica_gate gate{s};
  EXPECT_EQ(gate.workers_now(0), 5u);
  EXPECT_EQ(gate.workers_now(1500 * ms), 3u);  // 2.5 rounds to 3 (llround: half away from 0)
  EXPECT_EQ(gate.workers_now(3000 * ms), 5u);
}

TEST(ReplicaGate, CodelDropsARequestThatWaitedPastTheTargetWhileTheQueueStood) {
  const auto s = service_of("workers = 1\ndiscipline = \"codel(target=5ms, interval=100ms)\"");
  systems::replica_gate gate{s};
  systems::admission_ticket t;
  ASSERT_EQ(gate.arrive(0, t), door::in);
  EXPECT_TRUE(gate.seat(0));
  gate.wait(1, 0);  // the room was empty until now
  gate.wait(2, 190 * ms);
  gate.leave(t, 200 * ms, true, true);
  // Not empty for 200 ms > interval: standing, so the target (5 ms) applies. Request 1 waited
  // 200 ms: dropped, and its worker stays free for request 2, which waited 10 ms: dropped too.
  const auto first = gate.next(200 * ms);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->id, 1u);
  EXPECT_TRUE(first->dropped);
  const auto second = gate.next(200 * ms);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->id, 2u);
  EXPECT_TRUE(second->dropped);
  EXPECT_EQ(gate.busy(), 0u);
  EXPECT_FALSE(gate.next(200 * ms));
}

}  // namespace replica_gate_test
