// SPDX-License-Identifier: Apache-2.0
#include "spool.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include "descriptors.hpp"
#include "throw_errno.hpp"

namespace backoff::tool {
namespace {

std::string temp_directory() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

// write() until done: pipes and terminals take partial writes.
void write_all(int fd, const char* data, std::size_t size, const char* what) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(what);
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace

spool spool::create() {
  const std::string dir = temp_directory();
  // O_TMPFILE: never has a name. Some file systems lack it; then a named file, unlinked at once.
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::string path = dir + "/backoff-spool-XXXXXX";
    fd = ::mkostemp(path.data(), O_CLOEXEC);
    // Out of descriptors: start_shortage, which the tool waits out rather than fails on.
    if (fd < 0) throw_start_error(errno, "cannot create a spool file in " + dir);
    ::unlink(path.c_str());
  }
  return spool(fd);
}

spool& spool::operator=(spool&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

spool::~spool() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t spool::fill_from(int source, std::uint64_t limit) {
  char buf[65536];
  std::uint64_t total = 0;
  // What was spooled goes at once, not when the tool exits: the disk may be full because of it.
  const auto give_up = [this](spool_full::reason why, const std::string& message) {
    (void)::ftruncate(fd_, 0);
    throw spool_full(why, message);
  };
  for (;;) {
    const ssize_t n = ::read(source, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot read standard input");
    }
    if (limit != 0 && static_cast<std::uint64_t>(n) > limit - total) {
      give_up(spool_full::reason::limit,
              "standard input is larger than the limit of " + std::to_string(limit) + " bytes");
    }
    try {
      write_all(fd_, buf, static_cast<std::size_t>(n), "cannot write the spool file");
    } catch (const std::system_error& e) {
      const int error = e.code().value();
      const std::string where = "standard input does not fit in the spool file in " +
                                temp_directory() + ": " + std::strerror(error);
      if (error == EFBIG) {
        give_up(spool_full::reason::file_size_limit, where + " (the file-size limit, ulimit -f)");
      }
      if (error == ENOSPC || error == EDQUOT) give_up(spool_full::reason::no_space, where);
      throw;
    }
    total += static_cast<std::uint64_t>(n);
  }
  return total;
}

int spool::open_reader() const {
  // Reopening through /proc gives a new open file description, hence an independent offset, even
  // though the file has no name.
  const std::string path = "/proc/self/fd/" + std::to_string(fd_);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_start_error(errno, "cannot reopen the spool file");
  return fd;
}

std::uint64_t spool::copy_to(int target) const {
  char buf[65536];
  std::uint64_t total = 0;
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd_, buf, sizeof buf, offset);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot read the spool file");
    }
    write_all(target, buf, static_cast<std::size_t>(n), "cannot write the spooled output");
    offset += n;
    total += static_cast<std::uint64_t>(n);
  }
  return total;
}

void spool::clear() {
  if (::ftruncate(fd_, 0) != 0) throw_errno("cannot truncate the spool file");
  ::lseek(fd_, 0, SEEK_SET);
}

}  // namespace backoff::tool
