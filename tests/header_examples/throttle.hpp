// SPDX-License-Identifier: Apache-2.0
// What the examples in backoff/throttle.hpp take from their reader's program.
// blocks: 2 4 6
// scope: function
struct reply_type {
  bool overloaded;
  bool throttled;
};
reply_type send();
backoff::duration now();
void sleep(backoff::duration);
extern backoff::random_generator rng;
constexpr int overloaded = 1;
constexpr int failed = 1;
