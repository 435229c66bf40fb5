// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/bulkhead.hpp takes from its reader's program.
// blocks: 1
// scope: function
void call();
