// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/retry_budget.hpp takes from its reader's program.
// blocks: 1
// scope: function
backoff::duration now();
bool attempt();
void sleep(backoff::duration);
// with: policy random
extern backoff::random_generator rng;
extern backoff::backoff_state state;
