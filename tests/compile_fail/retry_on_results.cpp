// SPDX-License-Identifier: Apache-2.0
// Must not compile (CTest compile_fail_retry_on_results_*): what retry_on<E...> and the default
// classifier still refuse once retry_on takes any result type. Case 0 is the control that
// compiles: retry_on with a std::string result.
//   1: a number under retry_on (a status or a count taken for a success would hide a failure)
//   2: a std::string under the default classifier alone (it has no rule for it)
#include <stdexcept>
#include <string>

#include "backoff/retry.hpp"

int main() {
  const backoff::retry_policy policy{backoff::backoff_policy::constant(backoff::duration{1}), 2,
                                     backoff::duration{0}};
#if BACKOFF_CASE == 0
  (void)backoff::retry([] { return std::string("body"); },
                       backoff::retry_options<backoff::retry_on<std::runtime_error>>{policy});
#elif BACKOFF_CASE == 1
  (void)backoff::retry([] { return 503; },
                       backoff::retry_options<backoff::retry_on<std::runtime_error>>{policy});
#elif BACKOFF_CASE == 2
  (void)backoff::retry([] { return std::string("body"); }, backoff::retry_options<>{policy});
#endif
  return 0;
}
