// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/policy.hpp takes from its reader's program.
// blocks: 1
// scope: function
#include <cstdint>
using namespace std::chrono_literals;
extern std::uint64_t seed;
bool attempt();
void sleep(backoff::duration);
