// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/spec_keys.hpp takes from its reader's program.
// blocks: 1
// scope: namespace
#include <optional>
#include <string>
