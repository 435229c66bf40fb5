// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/keyed_breakers.hpp takes from its reader's program.
// blocks: 1
// scope: function
#include <memory>
#include <string>
backoff::duration now();
extern std::string host;
