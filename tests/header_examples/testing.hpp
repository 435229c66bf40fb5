// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/testing.hpp takes from its reader's program: nothing.
// blocks: 1
// scope: function
