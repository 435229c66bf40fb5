// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/http.hpp takes from its reader's program.
// blocks: 1
// scope: function
#include <map>
#include <string>
struct http_response {
  int status;
  std::map<std::string, std::string> fields;
  std::string operator[](const std::string& name) const { return fields.at(name); }
};
extern http_response response;
