// SPDX-License-Identifier: Apache-2.0
// Your own gRPC classifier: UNAVAILABLE before the call left is yours to know.
#include <cstdio>
#include <optional>
#include <string>

#include "backoff/http.hpp"
#include "backoff/verdict.hpp"

struct rpc_result {
  int code = 0;                         // 0 OK, 14 UNAVAILABLE, ...
  bool stream_started = true;           // false: the call never left this process
  std::optional<std::string> pushback;  // the grpc-retry-pushback-ms trailer
};

backoff::verdict classify_rpc(const rpc_result& r) {
  if (r.code == 0) return backoff::verdict::success();
  if (r.code != 14) return backoff::verdict::permanent();
  backoff::verdict v = backoff::verdict::retryable();
  v.not_sent = !r.stream_started;  // safe to retry even a call that is not idempotent
  if (r.pushback) {
    const auto wait = backoff::parse_grpc_retry_pushback(*r.pushback);
    if (!wait) return backoff::verdict::permanent();  // the server says: do not retry
    v.retry_after = wait;
    v.pushback = true;
  }
  return v;
}

int main() {
  const backoff::verdict before_sending = classify_rpc({14, false, std::nullopt});
  const backoff::verdict after_sending = classify_rpc({14, true, std::nullopt});
  std::printf("UNAVAILABLE before sending: not_sent=%d; after: not_sent=%d\n",
              before_sending.not_sent, after_sending.not_sent);
  return before_sending.not_sent && !after_sending.not_sent ? 0 : 1;
}
