// SPDX-License-Identifier: Apache-2.0
// A client that gates its calls to a dependency: 8 threads, each making 200 calls; the
// dependency answers in about 2 ms and says 503 to one call in 20. A call the gate refuses is
// not sent (the caller fails fast); a 503 backs the limit off; a 404 says nothing about capacity.
#include <atomic>
#include <backoff/concurrency_limit.hpp>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

backoff::duration now() {
  return std::chrono::steady_clock::now().time_since_epoch();
}

int call_dependency(int i) {  // stands in for an HTTP call
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return i % 20 == 0 ? 503 : i % 31 == 0 ? 404 : 200;
}

int main() {
  backoff::concurrency_limiter gate{
      backoff::parse_limit("limit(kind=aimd, initial=4, min=1, max=64, timeout=1s)")};
  std::atomic<int> not_sent{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const backoff::limit_permit permit = gate.try_acquire(now());
        if (!permit) {  // fail fast: as many calls in flight as the limit
          ++not_sent;
          continue;
        }
        const int status = call_dependency(i + t);
        gate.release(permit, now(),
                     status == 503   ? backoff::limit_outcome::dropped
                     : status >= 400 ? backoff::limit_outcome::ignored
                                     : backoff::limit_outcome::success);
      }
    });
  }
  for (auto& th : threads) th.join();
  const backoff::limiter_stats s = gate.stats();
  std::printf("limit %u, sent %llu (%llu ok, %llu dropped, %llu ignored), not sent %d\n", s.limit,
              static_cast<unsigned long long>(s.succeeded + s.dropped + s.ignored),
              static_cast<unsigned long long>(s.succeeded),
              static_cast<unsigned long long>(s.dropped),
              static_cast<unsigned long long>(s.ignored), not_sent.load());
}
