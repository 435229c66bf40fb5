// SPDX-License-Identifier: Apache-2.0
// The tests' recording_env is the installed one (backoff/testing.hpp), so what users get is what
// the library's own tests run on.
#pragma once

#include "backoff/testing.hpp"
