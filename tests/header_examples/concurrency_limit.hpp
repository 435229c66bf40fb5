// SPDX-License-Identifier: Apache-2.0
// What the examples in backoff/concurrency_limit.hpp take from their reader's program (the other
// indented runs there are prose, the call sequence in words and the spec grammar, not code).
// blocks: 5 6
// scope: function
backoff::duration now();
int fail_fast();
struct reply {
  bool overloaded() const;
  bool client_error() const;
};
reply send_request();
int handle();
int respond(int status_or_body);
