// SPDX-License-Identifier: Apache-2.0
#include "output_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <streambuf>
#include <utility>
#include <vector>

#include "backoff/error.hpp"

namespace backoff::report {
namespace fs = std::filesystem;

bool is_file_name(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

namespace {

constexpr const char* manifest_name = ".backoff-manifest";

std::string shown(const fs::path& p) {
  return escape_controls(p.string());
}

bool is_symlink_at(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// A streambuf over a file descriptor that remembers the first write error's errno, so that
// commit() can say why ("No space left on device"); std::ofstream loses the reason.
class fd_buffer : public std::streambuf {
 public:
  explicit fd_buffer(int fd) : fd_(fd) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  int error() const noexcept { return error_; }
  bool drain() {
    const char* at = pbase();
    while (at < pptr() && error_ == 0) {
      const ssize_t n = ::write(fd_, at, static_cast<std::size_t>(pptr() - at));
      if (n < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
      } else {
        at += n;
      }
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  int fd_;
  int error_ = 0;
  std::array<char, 1 << 16> buffer_{};
};

// A fresh hidden name beside `target`, created exclusively (never an existing file or link).
std::pair<fs::path, int> create_temporary(const fs::path& target) {
  static thread_local std::mt19937_64 names{std::random_device{}()};
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  for (int tries = 0;; ++tries) {
    const fs::path temporary = dir / ("." + target.filename().string() + ".backoff-tmp-" +
                                      std::to_string(names() % 1000000000));
    const int fd =
        ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) return {temporary, fd};
    if (errno != EEXIST || tries > 100) throw_write_error(target, errno);
  }
}

}  // namespace

void throw_write_error(const fs::path& path, int error) {
  throw write_error(shown(path) + ": " + std::strerror(error));
}

void refuse_symlink(const fs::path& path) {
  if (is_symlink_at(path)) {
    throw write_error(shown(path) +
                      ": is a symbolic link; backoff does not write through links (remove it or "
                      "choose another --out)");
  }
}

struct atomic_file::impl {
  fs::path temporary;
  int fd = -1;
  fd_buffer buffer;
  std::ostream stream;
  impl(fs::path t, int f) : temporary(std::move(t)), fd(f), buffer(f), stream(&buffer) {}
  ~impl() {
    if (fd >= 0) ::close(fd);
    if (!temporary.empty()) ::unlink(temporary.c_str());
  }
};

atomic_file::atomic_file(fs::path path) : path_(std::move(path)) {
  refuse_symlink(path_);
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw write_error(shown(path_) + ": is a folder");
    // A device, a pipe or a socket (/dev/stdout, a FIFO): written in place, never replaced.
    const int fd = ::open(path_.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) throw_write_error(path_, errno);
    impl_ = std::make_unique<impl>(fs::path(), fd);
    return;
  }
  auto [temporary, fd] = create_temporary(path_);
  impl_ = std::make_unique<impl>(std::move(temporary), fd);
}

atomic_file::atomic_file(atomic_file&&) noexcept = default;
atomic_file& atomic_file::operator=(atomic_file&&) noexcept = default;
atomic_file::~atomic_file() = default;

std::ostream& atomic_file::stream() {
  return impl_->stream;
}

void atomic_file::commit() {
  impl& f = *impl_;
  f.stream.flush();
  if (!f.buffer.drain()) throw_write_error(path_, f.buffer.error());
  if (::close(f.fd) != 0) {
    f.fd = -1;
    throw_write_error(path_, errno);
  }
  f.fd = -1;
  if (f.temporary.empty()) return;  // written in place (not a regular file)
  // Checked again just before: a link made during the run is not replaced either.
  refuse_symlink(path_);
  if (::rename(f.temporary.c_str(), path_.c_str()) != 0) throw_write_error(path_, errno);
  f.temporary.clear();
}

struct spool_file::impl {
  int fd = -1;
  fd_buffer buffer;
  std::ostream stream;
  explicit impl(int f) : fd(f), buffer(f), stream(&buffer) {}
  ~impl() { ::close(fd); }
};

namespace {

// An unnamed file in `dir` where the file system can make one (O_TMPFILE); else a fresh hidden
// name, created exclusively and removed at once. write_error naming `beside` when neither works.
int open_unnamed(const fs::path& dir, const fs::path& beside) {
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  static thread_local std::mt19937_64 names{std::random_device{}()};
  for (int tries = 0;; ++tries) {
    const fs::path name = dir / ("." + beside.filename().string() + ".backoff-spool-" +
                                 std::to_string(names() % 1000000000));
    const int named =
        ::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (named >= 0) {
      if (::unlink(name.c_str()) == 0) return named;
      const int error = errno;  // never left behind under a name
      ::close(named);
      throw_write_error(beside, error);
    }
    if (errno != EEXIST || tries > 100) throw_write_error(beside, errno);
  }
}

}  // namespace

spool_file::spool_file(fs::path beside) : beside_(std::move(beside)) {
  const int fd =
      open_unnamed(beside_.has_parent_path() ? beside_.parent_path() : fs::path("."), beside_);
  try {
    impl_ = std::make_unique<impl>(fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
}

spool_file::spool_file(spool_file&&) noexcept = default;
spool_file& spool_file::operator=(spool_file&&) noexcept = default;
spool_file::~spool_file() = default;

std::ostream& spool_file::stream() {
  return impl_->stream;
}

std::uint64_t spool_file::written() {
  impl& f = *impl_;
  f.stream.flush();
  f.buffer.drain();  // a failure is kept for append_to
  const off_t at = ::lseek(f.fd, 0, SEEK_CUR);
  return at > 0 ? static_cast<std::uint64_t>(at) : 0;
}

void spool_file::append_to(std::ostream& out, std::uint64_t from, std::uint64_t to) {
  impl& f = *impl_;
  f.stream.flush();
  if (!f.buffer.drain()) throw_write_error(beside_, f.buffer.error());
  std::array<char, 1 << 16> chunk{};
  while (from < to) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(to - from, chunk.size()));
    const ssize_t n = ::pread(f.fd, chunk.data(), want, static_cast<off_t>(from));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_write_error(beside_, errno);
    if (n == 0) throw_write_error(beside_, EIO);  // shorter than what was written
    out.write(chunk.data(), n);
    from += static_cast<std::uint64_t>(n);
  }
}

std::string read_whole_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file_atomically(const fs::path& path, std::string_view content) {
  atomic_file file(path);
  file.stream().write(content.data(), static_cast<std::streamsize>(content.size()));
  file.commit();
}

namespace {

// The names an earlier run's manifest lists (only well-formed ones: the file is not trusted).
std::vector<std::string> read_manifest(const fs::path& dir) {
  std::vector<std::string> names;
  const fs::path file = dir / manifest_name;
  if (is_symlink_at(file)) return names;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const bool folder = !line.empty() && line.back() == '/';
    const std::string name = folder ? line.substr(0, line.size() - 1) : line;
    if (is_file_name(name) && name != manifest_name) names.push_back(line);
  }
  return names;
}

// Removes a regular file (never a link, a folder or anything else).
void remove_regular(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::unlink(path.c_str()) != 0 &&
      errno != ENOENT) {
    throw write_error(shown(path) +
                      ": cannot remove this file of an earlier run: " + std::strerror(errno));
  }
}

// Removes what an earlier run wrote into `dir` (`earlier`, its manifest) that is not in `keep`.
void remove_stale(const fs::path& dir, const std::vector<std::string>& earlier,
                  const std::set<std::string>& keep) {
  for (const std::string& entry : earlier) {
    if (keep.count(entry) != 0) continue;
    if (entry.back() == '/') {
      const fs::path sub = dir / entry.substr(0, entry.size() - 1);
      struct stat st {};
      if (::lstat(sub.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      remove_stale(sub, read_manifest(sub), {});
      remove_regular(sub / manifest_name);
      ::rmdir(sub.c_str());  // only when empty: files the tool did not write stay
    } else {
      remove_regular(dir / entry);
    }
  }
}

}  // namespace

output_folder::output_folder(fs::path dir, manifest m) : dir_(std::move(dir)), manifest_(m) {
  if (dir_.empty()) dir_ = ".";
  refuse_symlink(dir_);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw write_error(shown(dir_) + ": cannot create the folder: " + ec.message());
  if (!fs::is_directory(dir_)) throw write_error(shown(dir_) + ": is not a folder");
  if (manifest_ != manifest::none) earlier_ = read_manifest(dir_);
}

void output_folder::begin(const std::string& name) {
  if (!is_file_name(name)) {
    throw write_error(shown(dir_ / name) + ": not a file name inside " + shown(dir_));
  }
  refuse_symlink(dir_ / name);
  if (begun_ || manifest_ != manifest::replace) return;
  begun_ = true;
  // summary.json marks a finished run: an earlier run's must not stand beside this run's files.
  for (const std::string& entry : earlier_) {
    if (entry == "summary.json") remove_regular(dir_ / entry);
  }
}

atomic_file output_folder::create(const std::string& name) {
  begin(name);
  written_.insert(name);
  return atomic_file(dir_ / name);
}

void output_folder::write(const std::string& name, std::string_view content) {
  atomic_file file = create(name);
  file.stream().write(content.data(), static_cast<std::streamsize>(content.size()));
  file.commit();
}

fs::path output_folder::subfolder(const std::string& name) {
  begin(name);
  written_.insert(name + "/");
  const fs::path sub = dir_ / name;
  std::error_code ec;
  fs::create_directories(sub, ec);
  if (ec) throw write_error(shown(sub) + ": cannot create the folder: " + ec.message());
  return sub;
}

void output_folder::adopt(const std::string& name) {
  begin(name);
  written_.insert(name);
}

void output_folder::finish() {
  if (manifest_ == manifest::none) return;
  std::set<std::string> listed = written_;
  if (manifest_ == manifest::add) {
    listed.insert(earlier_.begin(), earlier_.end());
  } else {
    remove_stale(dir_, earlier_, written_);
  }
  std::string text;
  for (const std::string& name : listed) text += name + "\n";
  write_file_atomically(dir_ / manifest_name, text);
}

}  // namespace backoff::report
