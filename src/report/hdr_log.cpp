// SPDX-License-Identifier: Apache-2.0
#include "hdr_log.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <optional>
#include <stdexcept>

namespace backoff::report {
namespace {

constexpr std::uint32_t encoding_cookie = 0x1c849303 | 0x10;
constexpr std::uint32_t compressed_cookie = 0x1c849304 | 0x10;
constexpr std::size_t header_size = 40;

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
}
void put_u64(std::string& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
}
void set_u32(std::string& out, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
}

// ZigZag, then LEB128 of at most 9 bytes: eight of 7 bits, the ninth with the last 8 bits whole.
void put_zigzag(std::string& out, std::int64_t value) {
  std::uint64_t v =
      (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
  for (int i = 0; i < 8; ++i) {
    if ((v >> 7) == 0) {
      out.push_back(static_cast<char>(v));
      return;
    }
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

class reader {
 public:
  explicit reader(std::string_view bytes) : bytes_(bytes) {}
  std::size_t left() const { return bytes_.size() - at_; }
  std::uint64_t u(int width) {
    need(static_cast<std::size_t>(width));
    std::uint64_t v = 0;
    for (int i = 0; i < width; ++i) v = (v << 8) | static_cast<unsigned char>(bytes_[at_++]);
    return v;
  }
  std::int64_t zigzag() {
    std::uint64_t v = 0;
    for (int i = 0; i < 9; ++i) {
      need(1);
      const auto b = static_cast<unsigned char>(bytes_[at_++]);
      if (i == 8) {
        v |= static_cast<std::uint64_t>(b) << 56;
        break;
      }
      v |= static_cast<std::uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) break;
    }
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
  }

 private:
  void need(std::size_t n) const {
    if (left() < n) throw std::invalid_argument("histogram encoding: truncated");
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

constexpr std::string_view base64_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

double parse_number(std::string_view text, const std::string& what) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) {
    throw std::invalid_argument(what + ": expected a number, got '" +
                                std::string(text.substr(0, 40)) + "'");
  }
  return v;
}

hdr_precision precision_of(std::uint64_t digits) {
  if (digits > 5) {
    throw std::invalid_argument("histogram encoding: significant digits must be 0 to 5");
  }
  return hdr_precision::significant_digits(static_cast<int>(digits));
}

std::int64_t highest_of(std::uint64_t highest) {
  if (highest < 2 ||
      highest > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw std::invalid_argument("histogram encoding: bad highest trackable value");
  }
  return static_cast<std::int64_t>(highest);
}

// The uncompressed encoding in `packed` (a zlib stream): its header first, then no more counts
// than the header's precision and range allow, each at most 9 bytes.
std::string inflate_encoding(std::string_view packed) {
  struct stream : z_stream {
    stream() : z_stream{} {
      if (inflateInit(this) != Z_OK) throw std::runtime_error("histogram encoding: zlib failed");
    }
    stream(const stream&) = delete;
    stream& operator=(const stream&) = delete;
    ~stream() { inflateEnd(this); }
  } z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  z.avail_in = static_cast<uInt>(packed.size());
  std::string plain(header_size, '\0');
  std::size_t have = 0;
  int rc = Z_OK;
  for (bool sized = false;;) {
    z.next_out = reinterpret_cast<Bytef*>(plain.data() + have);
    z.avail_out = static_cast<uInt>(plain.size() - have);
    rc = inflate(&z, Z_NO_FLUSH);
    have = plain.size() - z.avail_out;
    if (rc == Z_STREAM_END || (rc != Z_OK && rc != Z_BUF_ERROR) || have < plain.size() || sized) {
      break;
    }
    // The header is in: room for as many counts as its precision and range can hold.
    reader r(plain);
    if (r.u(4) != encoding_cookie) {
      throw std::invalid_argument("histogram encoding: not a V2 histogram (cookie)");
    }
    (void)r.u(8);  // payload length, normalizing index offset
    const hdr_precision precision = precision_of(r.u(4));
    (void)r.u(8);  // lowest discernible value
    const std::size_t limit = hdr_histogram(highest_of(r.u(8)), precision).index_limit();
    plain.resize(header_size + 9 * limit);
    sized = true;
  }
  if (rc != Z_STREAM_END) throw std::invalid_argument("histogram encoding: bad zlib stream");
  plain.resize(have);
  return plain;
}

}  // namespace

std::string encode_compressed(const hdr_histogram& h) {
  const std::optional<int> digits = h.precision().digits();
  if (!digits) {
    throw std::invalid_argument(
        "histogram encoding: the precision is not a whole number of significant digits");
  }
  std::string plain;
  put_u32(plain, encoding_cookie);
  put_u32(plain, 0);  // payload length, set below
  put_u32(plain, 0);  // normalizing index offset
  put_u32(plain, static_cast<std::uint32_t>(*digits));
  put_u64(plain, 1);  // lowest discernible value
  put_u64(plain, static_cast<std::uint64_t>(h.highest_trackable()));
  const double ratio = 1.0;
  std::uint64_t ratio_bits = 0;
  std::memcpy(&ratio_bits, &ratio, sizeof ratio);
  put_u64(plain, ratio_bits);
  const std::size_t limit = h.indices_used();
  for (std::size_t i = 0; i < limit;) {
    const std::uint64_t c = h.count_at_index(i++);
    if (c != 0) {
      put_zigzag(plain, static_cast<std::int64_t>(c));
      continue;
    }
    std::int64_t zeros = 1;
    while (i < limit && h.count_at_index(i) == 0) {
      ++zeros;
      ++i;
    }
    put_zigzag(plain, zeros > 1 ? -zeros : 0);
  }
  set_u32(plain, 4, static_cast<std::uint32_t>(plain.size() - header_size));

  uLongf packed_size = compressBound(static_cast<uLong>(plain.size()));
  std::string out(8 + packed_size, '\0');
  const int rc = compress2(reinterpret_cast<Bytef*>(out.data() + 8), &packed_size,
                           reinterpret_cast<const Bytef*>(plain.data()),
                           static_cast<uLong>(plain.size()), Z_DEFAULT_COMPRESSION);
  if (rc != Z_OK) throw std::runtime_error("histogram encoding: zlib failed");
  out.resize(8 + packed_size);
  set_u32(out, 0, compressed_cookie);
  set_u32(out, 4, static_cast<std::uint32_t>(packed_size));
  return out;
}

hdr_histogram decode_compressed(std::string_view bytes) {
  reader head(bytes);
  if (head.u(4) != compressed_cookie) {
    throw std::invalid_argument("histogram encoding: not a V2 compressed histogram (cookie)");
  }
  const std::uint64_t packed_size = head.u(4);
  if (packed_size != head.left()) {
    throw std::invalid_argument("histogram encoding: compressed length does not match");
  }
  const std::string plain = inflate_encoding(bytes.substr(8));
  reader r(plain);
  if (r.u(4) != encoding_cookie) {
    throw std::invalid_argument("histogram encoding: not a V2 histogram (cookie)");
  }
  const std::uint64_t payload = r.u(4);
  if (r.u(4) != 0) throw std::invalid_argument("histogram encoding: normalizing offset not 0");
  const hdr_precision precision = precision_of(r.u(4));
  if (r.u(8) != 1) throw std::invalid_argument("histogram encoding: lowest value is not 1");
  const std::int64_t highest = highest_of(r.u(8));
  (void)r.u(8);  // integer-to-double ratio
  if (payload != r.left()) throw std::invalid_argument("histogram encoding: payload length");
  const std::size_t limit = hdr_histogram(highest, precision).index_limit();
  std::vector<std::uint64_t> counts;
  std::size_t index = 0;
  while (r.left() > 0) {
    const std::int64_t v = r.zigzag();
    if (v < 0) {
      const std::uint64_t zeros = static_cast<std::uint64_t>(-(v + 1)) + 1;
      if (zeros > limit - index) {
        throw std::invalid_argument("histogram encoding: counts beyond the range");
      }
      index += static_cast<std::size_t>(zeros);
      continue;
    }
    if (index >= limit) throw std::invalid_argument("histogram encoding: counts beyond the range");
    if (v > 0) {
      counts.resize(index + 1, 0);
      counts[index] = static_cast<std::uint64_t>(v);
    }
    ++index;
  }
  return hdr_histogram::from_counts(highest, precision, std::move(counts));
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto n = (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16) |
                   (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8) |
                   static_cast<unsigned char>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(base64_alphabet[(n >> s) & 63]);
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out.push_back(base64_alphabet[(n >> 18) & 63]);
    out.push_back(base64_alphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? base64_alphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) throw std::invalid_argument("base64: length is not a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t n = 0;
    int pad = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      std::uint32_t v = 0;
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        ++pad;
      } else if (pad > 0) {
        throw std::invalid_argument("base64: data after padding");
      } else if (const auto at = base64_alphabet.find(c); at != std::string_view::npos) {
        v = static_cast<std::uint32_t>(at);
      } else {
        throw std::invalid_argument("base64: unexpected character");
      }
      n = (n << 6) | v;
    }
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

std::string hdr_log_header(double start_epoch_s, std::string_view unit_comment) {
  const auto whole = static_cast<std::time_t>(start_epoch_s);
  std::tm utc{};
  gmtime_r(&whole, &utc);
  char date[64];
  std::strftime(date, sizeof date, "%a %b %d %H:%M:%S UTC %Y", &utc);
  return fmt::format(
      "#[Histogram log format version 1.3]\n"
      "#[StartTime: {0:.3f} (seconds since epoch), {1}]\n"
      "#[BaseTime: {0:.3f} (seconds since epoch)]\n"
      "#[{2}]\n"
      "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
      start_epoch_s, date, unit_comment);
}

std::string hdr_log_line(double start_s, double length_s, const hdr_histogram& h,
                         double max_ratio) {
  return fmt::format("{:.3f},{:.3f},{:.3f},{}\n", start_s, length_s,
                     static_cast<double>(h.max()) / max_ratio, base64_encode(encode_compressed(h)));
}

hdr_log parse_hdr_log(std::string_view text) {
  hdr_log log;
  bool have_base = false;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = "line " + std::to_string(line_number);
    const auto time_after = [&](std::string_view key) {
      std::string_view rest = line.substr(key.size());
      rest = rest.substr(0, rest.find_first_of(" ]"));
      return parse_number(rest, where);
    };
    if (line.empty() || line.starts_with("\"StartTimestamp\"")) continue;
    if (line.starts_with("#[BaseTime: ")) {
      log.base_epoch_s = time_after("#[BaseTime: ");
      have_base = true;
      continue;
    }
    if (line.starts_with("#[StartTime: ")) {
      if (!have_base) log.base_epoch_s = time_after("#[StartTime: ");
      continue;
    }
    if (line.front() == '#') continue;
    if (line.starts_with("Tag=")) line = line.substr(std::min(line.size(), line.find(',') + 1));
    std::string_view fields[4];
    for (int i = 0; i < 3; ++i) {
      const std::size_t comma = line.find(',');
      if (comma == std::string_view::npos) {
        throw std::invalid_argument(where + ": expected start,length,max,histogram");
      }
      fields[i] = line.substr(0, comma);
      line = line.substr(comma + 1);
    }
    fields[3] = line;
    hdr_interval interval;
    interval.start_s = parse_number(fields[0], where);
    interval.length_s = parse_number(fields[1], where);
    try {
      interval.histogram = decode_compressed(base64_decode(fields[3]));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + ": " + e.what());
    }
    log.intervals.push_back(std::move(interval));
  }
  return log;
}

hdr_histogram merge_logs(const std::vector<hdr_log>& logs) {
  std::int64_t highest = 2;
  std::optional<hdr_precision> precision;
  for (const auto& log : logs) {
    for (const auto& i : log.intervals) {
      highest = std::max(highest, i.histogram.highest_trackable());
      if (!precision) precision = i.histogram.precision();
    }
  }
  hdr_histogram all = precision ? hdr_histogram(highest, *precision) : hdr_histogram(highest);
  for (const auto& log : logs) {
    for (const auto& i : log.intervals) all.add(i.histogram);
  }
  return all;
}

}  // namespace backoff::report
