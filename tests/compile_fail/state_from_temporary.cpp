// SPDX-License-Identifier: Apache-2.0
// Must not compile (CTest compile_fail_*): a state or a controller made from a temporary policy
// would refer to it after it is gone. BACKOFF_CASE picks the line; case 0 is the control that
// compiles, so a failure here is the deleted overload and not a broken setup.
#include "backoff/retry.hpp"
#include "backoff/spec.hpp"

int main() {
#if BACKOFF_CASE == 0
  const backoff::backoff_policy policy = backoff::parse_policy("grpc");
  auto state = policy.start();
  const backoff::retry_policy retry{policy, 3, backoff::duration{0}};
  backoff::retry_controller controller{retry, backoff::duration{0}};
#elif BACKOFF_CASE == 1
  auto state = backoff::parse_policy("grpc").start();
#elif BACKOFF_CASE == 2
  backoff::retry_controller controller{
      backoff::retry_policy{backoff::parse_policy("grpc"), 3, backoff::duration{0}},
      backoff::duration{0}};
#endif
  return 0;
}
