// SPDX-License-Identifier: Apache-2.0
// Disk-backed buffers for the retry tool's I/O modes, so that neither replaying stdin nor holding
// back an attempt's stdout is bounded by memory (minfrin/retry#29: a dump OOM-killed under
// `retry`). A spool is an unlinked file in $TMPDIR (or /tmp): nothing is left behind, even after a
// crash.
//
//   spool input = spool::create();
//   input.fill_from(STDIN_FILENO, 1 << 30);            // --replay-stdin: once, up front
//   int fd = input.open_reader();                      // per attempt: its own offset from 0
//
//   spool out = spool::create();                       // --stdout-on-success: per attempt
//   ... the attempt writes to out.fd() ...
//   out.copy_to(succeeded ? STDOUT_FILENO : STDERR_FILENO);
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace backoff::tool {

// The input did not fit: more than the limit, or a write refused for the file-size limit
// (EFBIG: `ulimit -f`; SIGXFSZ is ignored, process.hpp) or for want of space (ENOSPC, EDQUOT).
// Nothing of it is kept: the spool is left empty. The message is one line: "standard input is
// larger than the limit of 1073741824 bytes" or "... does not fit in the spool file in /tmp:
// File too large (the file-size limit, ulimit -f)".
class spool_full : public std::runtime_error {
 public:
  enum class reason { limit, file_size_limit, no_space };
  spool_full(reason why, const std::string& message) : std::runtime_error(message), why_(why) {}
  reason why() const noexcept { return why_; }

 private:
  reason why_;
};

class spool {
 public:
  // Throws std::system_error (with the directory in the message) when no file can be made;
  // start_shortage (descriptors.hpp) when no descriptor is left.
  static spool create();

  spool(spool&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  spool& operator=(spool&& other) noexcept;
  spool(const spool&) = delete;
  spool& operator=(const spool&) = delete;
  ~spool();

  int fd() const noexcept { return fd_; }

  // Copies everything readable from `source` until end of file; returns the byte count. More than
  // `limit` bytes (0: no limit of its own) throws spool_full, and so does a full disk or the
  // file-size limit; a read error throws std::system_error.
  std::uint64_t fill_from(int source, std::uint64_t limit = 0);
  // A new read-only descriptor on the same data, positioned at its start (close-on-exec; the
  // caller closes it). Each attempt gets its own, so no attempt sees another's read position.
  // start_shortage when no descriptor is left.
  int open_reader() const;
  // Writes the whole content, from the start, to `target`; returns the byte count.
  std::uint64_t copy_to(int target) const;
  // Empties it (for reuse by the next attempt).
  void clear();

 private:
  explicit spool(int fd) noexcept : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace backoff::tool
