// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/deadline_headers.hpp takes from its reader's program.
// blocks: 1
// scope: function
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

struct http_request {
  std::map<std::string, std::string, std::less<>> fields;
  void set(std::string_view name, std::string value) { fields[std::string(name)] = value; }
  std::string_view operator[](std::string_view name) const { return fields.find(name)->second; }
};
extern http_request request;
struct attempt_info {
  backoff::duration timeout;
  std::uint32_t attempt;
};
extern attempt_info attempt;
