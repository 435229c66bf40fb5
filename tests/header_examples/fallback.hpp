// SPDX-License-Identifier: Apache-2.0
// What the example in backoff/fallback.hpp takes from its reader's program.
// blocks: 1
// scope: function
#include <cstdint>
#include <string>
#include <string_view>
struct page_classifier {
  backoff::verdict operator()(const std::string& page) const;
};
struct page_cache {
  std::string get(const std::string& key);
};
extern page_cache cache;
extern std::string key;
extern backoff::retry_options<page_classifier> options;
std::string fetch();
void log_degraded(std::string_view why, std::uint32_t attempts);
void count_degraded();
void serve(const std::string&);
