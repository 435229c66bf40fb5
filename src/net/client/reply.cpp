// SPDX-License-Identifier: Apache-2.0
#include "reply.hpp"

#include <algorithm>
#include <cstring>

#include "net/common/put_buffered.hpp"

namespace backoff::net::load_detail {

const known_replies::entry* known_replies::find(std::string_view data, bool& prefix) const {
  prefix = false;
  for (std::size_t i = 0; i < used_; ++i) {
    const std::string& b = entries_[i].bytes;
    if (data.empty()) {  // (memcmp must not see the null pointer of an empty buffer)
      prefix = true;
    } else if (data.size() >= b.size()) {
      if (std::memcmp(data.data(), b.data(), b.size()) == 0) return &entries_[i];
    } else if (std::memcmp(data.data(), b.data(), data.size()) == 0) {
      prefix = true;
    }
  }
  return nullptr;
}

void known_replies::remember(std::string bytes, const reply_head& head) {
  if (bytes.empty()) return;
  entry& e = entries_[next_];
  e.bytes = std::move(bytes);
  e.head = head;
  next_ = (next_ + 1) % entries_.size();
  used_ = std::max(used_, next_ == 0 ? entries_.size() : next_);
}

// Feeds the buffered bytes to the parser: {} once the answer is complete (what follows it stays
// in the buffer), need_more, or the parser's error. The bytes the parser took are appended to
// `taken` while it holds no more than known_replies::max_bytes (`too_long` says when it did not).
beast::error_code parse_buffered(beast::flat_buffer& buffer, reply_parser& parser,
                                 std::string& taken, bool& too_long) {
  return put_buffered(buffer, parser, [&](const auto& bytes, std::size_t used) {
    if (too_long || used == 0) return;
    if (taken.size() + used > known_replies::max_bytes) {
      too_long = true;
    } else {
      taken.append(static_cast<const char*>(bytes.data()), used);
    }
  });
}

void answer_reader::start_parser() {
  parser_.emplace();
  parser_->eager(true);  // header and body in one put when they came together
}

beast::error_code answer_reader::take(beast::flat_buffer& buffer, known_replies& known,
                                      reply_head& head) {
  if (!parser_) {
    const auto data = buffer.data();
    bool prefix = false;
    if (const known_replies::entry* k = known.find(
            std::string_view(static_cast<const char*>(data.data()), data.size()), prefix)) {
      head = k->head;
      buffer.consume(k->bytes.size());
      return {};
    }
    if (!prefix) start_parser();
  }
  if (!parser_) return http::error::need_more;  // the beginning of a known answer
  const beast::error_code ec = parse_buffered(buffer, *parser_, taken_, too_long_);
  if (!ec) {
    head = parser_->head();
    if (!too_long_) known.remember(std::move(taken_), head);
  }
  return ec;
}

beast::error_code answer_reader::take_eof(beast::flat_buffer& buffer, reply_head& head) {
  if (!parser_) {
    // The beginning of a known answer, or nothing: the parser judges the end as before.
    start_parser();
    const beast::error_code ec = parse_buffered(buffer, *parser_, taken_, too_long_);
    if (!ec) {
      head = parser_->head();
      return {};
    }
    if (ec != http::error::need_more) return ec;
  }
  if (!parser_->got_some()) return http::error::end_of_stream;
  beast::error_code ec;
  parser_->put_eof(ec);
  if (ec) return ec;
  if (!parser_->is_done()) return http::error::partial_message;
  head = parser_->head();
  return {};
}

}  // namespace backoff::net::load_detail
