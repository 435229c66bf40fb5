// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/strategy.hpp takes from its reader's program: the clock's reading.
// blocks: 1
// scope: function
extern backoff::duration now;
