// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/classify.hpp takes from its reader's program.
// blocks: 2
// scope: function
#include <ios>
#include <optional>
#include <string>
#include <system_error>
