// SPDX-License-Identifier: Apache-2.0
// Constants of the statistical bounds the jitter tests share.
//
//   EXPECT_NEAR(mean, width / 2, 4 * width / backoff::test::sqrt12 / std::sqrt(n));  // 4 SE
#pragma once

#include <cmath>

namespace backoff::test {

// U(a, a + w) has standard deviation w / sqrt(12).
inline const double sqrt12 = std::sqrt(12.0);

}  // namespace backoff::test
