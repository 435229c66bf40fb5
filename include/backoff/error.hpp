// The one exception type of the library: bad text (a duration, a policy spec, a Retry-After
// header) or a policy whose parameters contradict each other. Its message is one line that names
// the bad part, ready to print as is:
//
//   try { auto p = backoff::parse_policy(argv[1]); }
//   catch (const backoff::parse_error& e) { std::cerr << e.what() << '\n'; return 2; }
#pragma once

#include <stdexcept>
#include <string>

namespace backoff {

class parse_error : public std::invalid_argument {
 public:
  explicit parse_error(const std::string& message) : std::invalid_argument(message) {}
};

}  // namespace backoff
