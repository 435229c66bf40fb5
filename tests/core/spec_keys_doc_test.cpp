// SPDX-License-Identifier: Apache-2.0
// docs/POLICIES.md carries each spec kind's key table exactly as the library renders it from the
// table its reader uses (spec_keys.hpp), so the docs cannot drift from what is parsed.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "backoff/spec_keys.hpp"

namespace {

std::string read_doc(const std::string& name) {
  // Appended in steps: GCC 12 warns (-Warray-bounds) about a temporary chain here.
  std::string path = BACKOFF_SOURCE_DIR;
  path += "/docs/";
  path += name;
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SpecKeysDoc, PoliciesMdCarriesEveryKindsKeyTableVerbatim) {
  const std::string doc = read_doc("POLICIES.md");
  ASSERT_FALSE(doc.empty()) << "cannot read docs/POLICIES.md";
  for (const std::string_view kind :
       {"policy", "window", "budget", "throttle", "breaker", "hedge", "deadline"}) {
    const std::string table = backoff::spec_keys_markdown(kind);
    ASSERT_FALSE(table.empty()) << kind;
    EXPECT_NE(doc.find("\n\n" + table + "\n"), std::string::npos)
        << "docs/POLICIES.md lacks the " << kind << " key table; it should read:\n"
        << table;
  }
}

}  // namespace
