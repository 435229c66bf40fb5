// SPDX-License-Identifier: Apache-2.0
// A file of the checkout's docs/ folder, for tests that hold the docs to the code (the key
// tables rendered from the readers' tables). The test target defines BACKOFF_SOURCE_DIR.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace backoff::testing {

// The whole of docs/NAME, or "" when it cannot be read.
inline std::string read_doc(const std::string& name) {
  // Appended in steps: GCC 12 warns (-Warray-bounds) about a temporary chain here.
  std::string path = BACKOFF_SOURCE_DIR;
  path += "/docs/";
  path += name;
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace backoff::testing
