// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/aimd_window.hpp takes from its reader's program.
// blocks: 1
// scope: function
#include <vector>
struct job {};
extern std::vector<job> jobs;
void start(const job&, const backoff::send_ticket&);
extern const backoff::send_ticket ticket;  // the one a response is for
extern bool ok;
using backoff::aimd_window;
