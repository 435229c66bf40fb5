// SPDX-License-Identifier: Apache-2.0
// A bulkhead: at most max calls at once, and a bounded line of callers that wait for a slot.
#include <backoff/bulkhead.hpp>
#include <cstdio>

int main() {
  backoff::bulkhead pool{backoff::parse_bulkhead("bulkhead(max=2)")};
  const bool first = pool.try_enter();
  const bool second = pool.try_enter();
  const bool third = pool.try_enter();
  std::printf("%d %d %d\n", first, second, third);  // 1 1 0: max=2, no queue
  pool.leave();
  std::printf("%u in use\n", pool.in_use());  // 1 in use
  pool.leave();

  // Waiting: up to 4 callers wait up to 200 ms each for a slot.
  backoff::bulkhead waiting{backoff::parse_bulkhead("bulkhead(max=2, queue=4, wait=200ms)")};
  if (backoff::enter(waiting)) {  // blocks this thread for at most 200 ms
    std::puts("inside");
    waiting.leave();
  }
}
