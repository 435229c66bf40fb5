// SPDX-License-Identifier: Apache-2.0
// The whole public library in one include. Start with policy.hpp (delays), retry.hpp (the loop)
// and spec.hpp (policies as text); presets.hpp lists the named policies.
#pragma once

#include "backoff/aimd_window.hpp"
#include "backoff/circuit_breaker.hpp"
#include "backoff/classify.hpp"
#include "backoff/clock.hpp"
#include "backoff/deadline.hpp"
#include "backoff/deadline_headers.hpp"
#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/hedge.hpp"
#include "backoff/hooks.hpp"
#include "backoff/http.hpp"
#include "backoff/keyed_breakers.hpp"
#include "backoff/outcome.hpp"
#include "backoff/policy.hpp"
#include "backoff/presets.hpp"
#include "backoff/random.hpp"
#include "backoff/retry.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "backoff/throttle.hpp"
#include "backoff/verdict.hpp"
