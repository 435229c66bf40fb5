// SPDX-License-Identifier: Apache-2.0
// The tests' recording_async_env is the installed one (backoff/async_testing.hpp), so what users
// get is what the library's own tests run on.
#pragma once

#include "backoff/async_testing.hpp"
