// SPDX-License-Identifier: Apache-2.0
// docs/POLICIES.md carries each spec kind's key table exactly as the library renders it from the
// table its reader uses (spec_keys.hpp), so the docs cannot drift from what is parsed.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "backoff/spec_keys.hpp"
#include "source_doc.hpp"

namespace {

using backoff::testing::read_doc;

TEST(SpecKeysDoc, PoliciesMdCarriesEveryKindsKeyTableVerbatim) {
  const std::string doc = read_doc("POLICIES.md");
  ASSERT_FALSE(doc.empty()) << "cannot read docs/POLICIES.md";
  for (const std::string_view kind : {"policy", "window", "budget", "throttle", "breaker", "hedge",
                                      "deadline", "bulkhead", "limit", "rate", "fallback"}) {
    const std::string table = backoff::spec_keys_markdown(kind);
    ASSERT_FALSE(table.empty()) << kind;
    EXPECT_NE(doc.find("\n\n" + table + "\n"), std::string::npos)
        << "docs/POLICIES.md lacks the " << kind << " key table; it should read:\n"
        << table;
  }
}

}  // namespace
