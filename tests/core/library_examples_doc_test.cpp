// SPDX-License-Identifier: Apache-2.0
// docs/LIBRARY.md shows each capability's runnable example as it is in examples/cpp/ (built and
// run by the example_* tests): a block marked <!-- example: NAME --> is that file's text after
// its licence line, so the docs cannot drift from the program that is run.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "source_doc.hpp"

namespace {

using backoff::testing::read_doc;

TEST(LibraryExamplesDoc, EveryMarkedBlockIsItsExampleFile) {
  const std::string doc = read_doc("LIBRARY.md");
  ASSERT_FALSE(doc.empty()) << "cannot read docs/LIBRARY.md";
  const std::string marker = "<!-- example: ";
  std::set<std::string> shown;
  for (std::size_t at = doc.find(marker); at != std::string::npos; at = doc.find(marker, at + 1)) {
    const std::size_t name_end = doc.find(" -->", at);
    ASSERT_NE(name_end, std::string::npos);
    const std::string name = doc.substr(at + marker.size(), name_end - at - marker.size());
    const std::size_t open = doc.find("```cpp\n", name_end);
    ASSERT_NE(open, std::string::npos) << name;
    const std::size_t body = open + 7;
    const std::size_t close = doc.find("```", body);
    ASSERT_NE(close, std::string::npos) << name;
    const std::string block = doc.substr(body, close - body);
    const std::string file = read_doc("../examples/cpp/" + name + ".cpp");
    ASSERT_FALSE(file.empty()) << "docs/LIBRARY.md shows examples/cpp/" << name
                               << ".cpp, which cannot be read";
    EXPECT_EQ(block, file.substr(file.find('\n') + 1))
        << "docs/LIBRARY.md's example " << name << " differs from examples/cpp/" << name << ".cpp";
    shown.insert(name);
  }
  // One per capability of the guards sections.
  for (const char* name : {"pushback_headers", "not_sent", "retry_on_any_result",
                           "breaker_slow_calls", "breaker_manual_states", "breaker_growing_break",
                           "breaker_retry_after", "bulkhead", "rate_limiter", "limit_client_gate",
                           "limit_server_admission", "testing_without_sleeping"}) {
    EXPECT_TRUE(shown.count(name)) << "docs/LIBRARY.md does not show examples/cpp/" << name;
  }
}

}  // namespace
