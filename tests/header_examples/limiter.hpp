// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/limiter.hpp takes from its reader's program.
// blocks: 1
// scope: function
backoff::duration now();
int fail_fast();
void sleep(backoff::duration);
bool call();
