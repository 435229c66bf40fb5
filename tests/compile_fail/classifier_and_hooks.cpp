// SPDX-License-Identifier: Apache-2.0
// Must not compile (CTest compile_fail_classifier_and_hooks_*): mistakes the options API turns
// into compile errors instead of silent misbehaviour. Case 0 is the control that compiles.
//   1: an int given to the default classifier (a status? a count? it would pass as a bool)
//   2: a hooks member that is not const (it would never be called)
#include "backoff/retry.hpp"

namespace {
struct const_hooks {
  void on_success(const backoff::success_event&) const {}
};
struct mutable_hooks {
  int successes = 0;
  void on_success(const backoff::success_event&) { ++successes; }
};
}  // namespace

int main() {
  const backoff::retry_policy policy{backoff::backoff_policy::constant(backoff::duration{1}), 2,
                                     backoff::duration{0}};
#if BACKOFF_CASE == 0
  (void)backoff::retry([] { return true; },
                       backoff::retry_options<backoff::default_classifier, const_hooks>{policy});
#elif BACKOFF_CASE == 1
  (void)backoff::retry([] { return 200; }, backoff::retry_options<>{policy});
#elif BACKOFF_CASE == 2
  (void)backoff::retry([] { return true; },
                       backoff::retry_options<backoff::default_classifier, mutable_hooks>{policy});
#endif
  return 0;
}
