// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/rate_limiter.hpp takes from its reader's program.
// blocks: 1
// scope: function
backoff::duration now();
void sleep(backoff::duration);
void call();
