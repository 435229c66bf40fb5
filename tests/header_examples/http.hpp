// SPDX-License-Identifier: Apache-2.0
// What the examples in backoff/http.hpp take from their reader's program.
// blocks: 1 2
// scope: function
#include <map>
#include <optional>
#include <string>
#include <string_view>
struct http_response {
  int status;
  std::map<std::string, std::string> fields;
  std::string operator[](const std::string& name) const { return fields.at(name); }
  std::optional<std::string_view> find(const char* name) const {
    const auto it = fields.find(name);
    if (it == fields.end()) return std::nullopt;
    return std::string_view(it->second);
  }
};
extern http_response response;
