// SPDX-License-Identifier: Apache-2.0
// A server that admits requests through an adaptive limit, in virtual time: 40 requests arrive
// every millisecond; the server answers in 10 ms while at most 100 requests are in progress and
// slows down by 1 % for each request beyond that (queueing). The limit finds that knee and sheds
// the rest with 503 instead of letting every answer slow down.
#include <backoff/concurrency_limit.hpp>
#include <backoff/prometheus_text.hpp>
#include <chrono>
#include <cstdio>
#include <queue>
#include <vector>

using namespace std::chrono_literals;

struct in_progress {
  backoff::duration done;
  backoff::duration arrived;
  backoff::limit_permit permit;
  bool operator>(const in_progress& o) const { return done > o.done; }
};

int main(int argc, char** argv) {
  const char* spec = argc > 1 ? argv[1] : "limit(kind=vegas)";
  backoff::concurrency_limiter admission{backoff::parse_limit(spec)};
  std::priority_queue<in_progress, std::vector<in_progress>, std::greater<>> running;
  int served = 0, shed = 0;
  backoff::duration waited{0};
  for (backoff::duration now = 0ms; now < 5s; now += 1ms) {
    while (!running.empty() && running.top().done <= now) {  // answers leave
      admission.release(running.top().permit, now, backoff::limit_outcome::success);
      waited += now - running.top().arrived;
      running.pop();
      ++served;
    }
    for (int i = 0; i < 40; ++i) {  // arrivals
      const backoff::limit_permit permit = admission.try_acquire(now);
      if (!permit) {
        ++shed;  // respond 503 at once
        continue;
      }
      const double busy = static_cast<double>(admission.inflight());
      const double slowdown = busy > 100 ? 1.0 + (busy - 100) / 100 : 1.0;
      running.push(
          {now + std::chrono::duration_cast<backoff::duration>(10ms * slowdown), now, permit});
    }
    if (now % 1s == 0ms)
      std::printf("t=%5.1fs limit=%u inflight=%u\n", backoff::to_seconds(now), admission.limit(),
                  admission.inflight());
  }
  std::printf("%s: served %d in %.1f ms on average, shed %d\n", spec, served,
              backoff::to_seconds(waited) * 1000 / served, shed);
  backoff::prometheus_writer metrics;
  backoff::write_limiter_metrics(metrics, admission.stats(), "api_admission");
  std::fputs(metrics.text().c_str(), stdout);
}
