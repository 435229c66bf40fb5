// SPDX-License-Identifier: Apache-2.0
#include "sweep_spool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "output_files.hpp"
#include "summary.hpp"

namespace backoff::report {
namespace {

// An unlinked temporary file in `dir`: gone with the process, whatever ends it.
std::FILE* anonymous_file(const std::filesystem::path& dir) {
  std::string name = (dir / ".backoff-spool-XXXXXX").string();
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    throw write_error(dir.string() + ": cannot create a temporary file: " + std::strerror(errno));
  }
  ::unlink(name.c_str());
  std::FILE* f = ::fdopen(fd, "w+b");
  if (f == nullptr) {
    ::close(fd);
    throw write_error(dir.string() + ": cannot open a temporary file: " + std::strerror(errno));
  }
  return f;
}

void write_bytes(std::FILE* f, const void* data, std::size_t size,
                 const std::filesystem::path& dir) {
  if (size != 0 && std::fwrite(data, 1, size, f) != size) {
    throw write_error(dir.string() + ": temporary file of the sweep: " + std::strerror(errno));
  }
}

bool read_bytes(std::FILE* f, void* data, std::size_t size) {
  return size == 0 || std::fread(data, 1, size, f) == size;
}

// summary.json's indentation of a point: two levels in.
std::string indented(const std::string& text) {
  std::string out = "    ";
  for (const char c : text) {
    out += c;
    if (c == '\n') out += "    ";
  }
  return out;
}

}  // namespace

sweep_spool::sweep_spool(const std::filesystem::path& dir, bool outage, std::size_t key_columns)
    : dir_(dir), outage_(outage) {
  json_ = anonymous_file(dir);
  csv_ = anonymous_file(dir);
  table_ = anonymous_file(dir);
  columns_.left_columns = key_columns + 1;
}

sweep_spool::~sweep_spool() {
  for (std::FILE* f : {json_, csv_, table_}) {
    if (f != nullptr) std::fclose(f);
  }
}

void sweep_spool::put(std::FILE* f, const std::vector<std::string>& record) {
  const std::uint64_t count = record.size();
  write_bytes(f, &count, sizeof count, dir_);
  for (const std::string& part : record) {
    const std::uint64_t size = part.size();
    write_bytes(f, &size, sizeof size, dir_);
    write_bytes(f, part.data(), part.size(), dir_);
  }
}

void sweep_spool::each(std::FILE* f,
                       const std::function<void(const std::vector<std::string>&)>& visit) const {
  if (std::fflush(f) != 0 || std::fseek(f, 0, SEEK_SET) != 0) {
    throw write_error(dir_.string() + ": temporary file of the sweep: " + std::strerror(errno));
  }
  std::vector<std::string> record;
  for (;;) {
    std::uint64_t count = 0;
    if (!read_bytes(f, &count, sizeof count)) break;
    record.resize(count);
    for (std::string& part : record) {
      std::uint64_t size = 0;
      part.resize(0);
      if (!read_bytes(f, &size, sizeof size))
        throw write_error(dir_.string() + ": spool cut short");
      part.resize(size);
      if (!read_bytes(f, part.data(), size)) throw write_error(dir_.string() + ": spool cut short");
    }
    visit(record);
  }
  if (std::ferror(f) != 0) {
    throw write_error(dir_.string() + ": temporary file of the sweep: cannot read it back");
  }
  std::fseek(f, 0, SEEK_END);  // more may be added after a pass
}

void sweep_spool::add(const point_result& point) {
  put(json_, {indented(json_text(sweep_point_json(point)))});
  for (const sweep_cell& cell : point.strategies) {
    if (!sweep_cell_complete(cell)) continue;  // an interrupted sweep: summary.json marks these
    std::vector<std::string> row{sweep_csv_core(point, cell)};
    for (const std::string& name : sweep_cell_fields(cell)) {
      if (std::find(fields_.begin(), fields_.end(), name) == fields_.end()) fields_.push_back(name);
      row.push_back(name);
      row.push_back(sweep_csv_field(cell, name));
    }
    put(csv_, row);
  }
  std::vector<std::vector<std::string>> rows;
  comparison_point_rows(point, outage_, rows);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) columns_.measure(c, row[c]);
    put(table_, row);
  }
  ++points_;
}

void sweep_spool::write_points_json(std::ostream& out) const {
  bool first = true;
  each(json_, [&](const std::vector<std::string>& record) {
    if (!first) out << ",\n";
    first = false;
    out << record.front();
  });
}

void sweep_spool::write_csv_rows(std::ostream& out) const {
  std::string line;
  each(csv_, [&](const std::vector<std::string>& record) {
    line = record.front();
    for (const std::string& name : fields_) {
      std::string_view text = ",,";  // a field this cell's runs do not have
      for (std::size_t i = 1; i + 1 < record.size(); i += 2) {
        if (record[i] == name) text = record[i + 1];
      }
      line += text;
    }
    line += '\n';
    out << line;
  });
}

void sweep_spool::write_table(std::ostream& out, const std::vector<std::string>& header) const {
  text_columns columns = columns_;
  for (std::size_t c = 0; c < header.size(); ++c) columns.measure(c, header[c]);
  std::string line;
  columns.append_row(line, header);
  out << line;
  each(table_, [&](const std::vector<std::string>& record) {
    line.clear();
    columns.append_row(line, record);
    out << line;
  });
}

}  // namespace backoff::report
