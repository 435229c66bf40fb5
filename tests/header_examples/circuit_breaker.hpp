// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/circuit_breaker.hpp takes from its reader's program (the later
// indented runs there are prose and the spec grammar, not code).
// blocks: 1
// scope: function
backoff::duration now();
int fail_fast(std::optional<backoff::duration> retry_after);  // nullopt: forced open
bool call();
