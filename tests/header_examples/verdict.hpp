// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/verdict.hpp takes from its reader's program.
// blocks: 1
// scope: namespace
#include <optional>
struct my_reply {
  bool ok;
  bool transient;
  std::optional<backoff::duration> retry_after;
};
