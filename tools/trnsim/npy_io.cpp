#include "tools/trnsim/npy_io.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include "tools/trnsim/commands.h"

namespace trnsim::tool {

namespace {
// Bytes of the .npy preamble + header: magic(6) version(2) then a 2-byte (v1) or 4-byte (v2, v3) header length.
uint64_t npy_header_bytes(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput(fmt::format("{} {}: cannot open for reading ({})", flag, path, std::strerror(errno)));
  unsigned char pre[12] = {};
  in.read(reinterpret_cast<char*>(pre), sizeof pre);
  if (in.gcount() < 10 || std::memcmp(pre, "\x93NUMPY", 6) != 0) {
    throw BadInput(fmt::format("{} {}: not a .npy file (no \\x93NUMPY magic)", flag, path));
  }
  if (pre[6] < 1 || pre[6] > 3) {
    throw BadInput(fmt::format("{} {}: .npy format version {}.{}, expected 1.0, 2.0 or 3.0", flag, path, pre[6], pre[7]));
  }
  if (pre[6] == 1) return 10u + (pre[8] | (pre[9] << 8));
  if (in.gcount() < 12) throw BadInput(fmt::format("{} {}: truncated .npy header", flag, path));
  return 12u + (pre[8] | (pre[9] << 8) | (uint64_t(pre[10]) << 16) | (uint64_t(pre[11]) << 24));
}

/// The header's dictionary, parsed as the Python literal it is (NEP 1, "A simple file format for NumPy arrays": a
/// dict of exactly 'descr', 'fortran_order' and 'shape', strings in single or double quotes, True/False, a tuple
/// of integers, then spaces and a newline up to the header's length). Anything else is refused naming the byte.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::string> shape;  ///< the tuple's items as written (digits, maybe an old 'L' suffix)
  std::string shape_text;          ///< the tuple as written, for messages
};

class NpyHeaderParser {
 public:
  NpyHeaderParser(const std::string& text, const std::string& flag, const std::string& path)
      : t_(text), flag_(flag), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool descr = false, order = false, shape = false;
    expect('{');
    while (skip_spaces(), peek() != '}') {
      const std::size_t key_at = at_;
      const std::string key = string_literal();
      skip_spaces();
      expect(':');
      skip_spaces();
      bool* seen = key == "descr" ? &descr : key == "fortran_order" ? &order : key == "shape" ? &shape : nullptr;
      if (!seen) fail(key_at, fmt::format("key '{}' (a .npy header has 'descr', 'fortran_order' and 'shape')", key));
      if (*seen) fail(key_at, fmt::format("key '{}' given twice", key));
      *seen = true;
      if (key == "descr") h.descr = string_literal();
      if (key == "fortran_order") h.fortran_order = boolean();
      if (key == "shape") h.shape = tuple(&h.shape_text);
      skip_spaces();
      if (peek() != ',') break;
      ++at_;
    }
    skip_spaces();
    expect('}');
    while (at_ < t_.size() && (t_[at_] == ' ' || t_[at_] == '\n')) ++at_;
    if (at_ != t_.size()) fail(at_, "bytes after the dictionary that are not padding");
    if (!descr || !order || !shape) {
      fail(at_, fmt::format("no '{}'", !descr ? "descr" : !order ? "fortran_order" : "shape"));
    }
    return h;
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw BadInput(fmt::format("{} {}: the .npy header's dictionary at byte {}: {}", flag_, path_, at, what));
  }
  char peek() const { return at_ < t_.size() ? t_[at_] : '\0'; }
  void skip_spaces() {
    while (at_ < t_.size() && (t_[at_] == ' ' || t_[at_] == '\t')) ++at_;
  }
  void expect(char c) {
    if (peek() != c) fail(at_, fmt::format("expected '{}'", c));
    ++at_;
  }
  std::string string_literal() {
    const char q = peek();
    if (q != '\'' && q != '"') fail(at_, "expected a quoted string");
    const std::size_t end = t_.find(q, at_ + 1);
    if (end == std::string::npos) fail(at_, "a string that does not end");
    std::string v = t_.substr(at_ + 1, end - at_ - 1);
    at_ = end + 1;
    return v;
  }
  bool boolean() {
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::size_t n = std::strlen(word);
      const bool word_ends = at_ + n >= t_.size() || !std::isalnum(static_cast<unsigned char>(t_[at_ + n]));
      if (t_.compare(at_, n, word) == 0 && word_ends) {
        at_ += n;
        return value;
      }
    }
    fail(at_, "expected True or False");
  }
  std::vector<std::string> tuple(std::string* text) {
    const std::size_t open = at_;
    expect('(');
    std::vector<std::string> items;
    while (skip_spaces(), peek() != ')') {
      // An item as written, up to its comma (npy_shape says which are not sizes); Python 2's long suffix 'L', as
      // old numpy wrote it, dropped.
      const std::size_t item_at = at_;
      while (at_ < t_.size() && t_[at_] != ',' && t_[at_] != ')' && t_[at_] != '}') ++at_;
      std::string item = t_.substr(item_at, at_ - item_at);
      item.erase(item.find_last_not_of(" \t") + 1);
      if (!item.empty() && item.back() == 'L') item.pop_back();
      if (item.empty()) fail(item_at, "an empty dimension in the shape");
      items.push_back(item);
      if (peek() != ',') break;
      ++at_;
    }
    skip_spaces();
    expect(')');
    *text = t_.substr(open, at_ - open);
    return items;
  }

  const std::string& t_;
  const std::string& flag_;
  const std::string& path_;
  std::size_t at_ = 0;
};

/// The shape the header's dictionary names ('shape': (d0, d1, ...)), checked before anything is allocated: the
/// element type float32, row-major, every dimension a number >= 0, and their product of float32 exactly the bytes
/// after the header (so a damaged or hostile header names its shape instead of failing with bad_alloc).
std::vector<uint64_t> npy_shape(const std::string& path, const std::string& flag, uint64_t header, uint64_t file) {
  if (header > file) {
    throw BadInput(fmt::format("{} {}: the .npy header says it is {} bytes long, the file has {}", flag, path, header,
                               file));
  }
  if (header > (1u << 20)) {
    throw BadInput(fmt::format("{} {}: the .npy header is {} bytes long (more than 1 MiB)", flag, path, header));
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(header, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  if (!in) throw BadInput(fmt::format("{} {}: cannot read the .npy header's {} bytes", flag, path, header));
  // The dictionary follows the preamble: magic (6), version (2), length (2 for version 1, 4 after).
  const std::size_t dict = text[6] == 1 ? 10 : 12;
  const NpyHeader h = NpyHeaderParser(text.substr(dict), flag, path).parse();
  if (h.descr != "<f4" && h.descr != "f4") {
    throw BadInput(fmt::format("{} {}: element type '{}', expected float32 ('<f4')", flag, path, h.descr));
  }
  if (h.fortran_order) {
    throw BadInput(fmt::format("{} {}: a column-major array ('fortran_order': True); only row-major arrays are read "
                               "(numpy.ascontiguousarray before numpy.save)", flag, path));
  }
  const std::string& tuple = h.shape_text;
  std::vector<uint64_t> shape;
  unsigned __int128 elements = 1, nonzero = 1;  // nonzero: the product of the dimensions other than 0
  for (const std::string& item : h.shape) {
    if (item.find_first_not_of("0123456789") != std::string::npos || item.size() > 19) {
      throw BadInput(fmt::format("{} {}: shape {} has a dimension '{}' that is not a size", flag, path, tuple, item));
    }
    shape.push_back(std::stoull(item));
    // Saturating: once the product is past any file's size it stays so (no wrap-around to a size that matches).
    elements = std::min<unsigned __int128>(elements * shape.back(), (unsigned __int128)(UINT64_MAX) + 1);
    if (shape.back() > 0) nonzero = std::min<unsigned __int128>(nonzero * shape.back(), (unsigned __int128)(1) << 64);
  }
  const uint64_t data = file > header ? file - header : 0;
  if (elements * 4 != data) {
    throw BadInput(fmt::format("{} {}: shape {} describes {} float32 bytes, the file has {} after its header", flag,
                               path, tuple, elements > (unsigned __int128)(UINT64_MAX) / 4
                                                ? std::string("more than 2^64")
                                                : std::to_string(uint64_t(elements * 4)),
                               data));
  }
  // An empty array (a 0 in the shape, no data): its other dimensions must still index with signed 64-bit
  // strides, as every array library's do (found by the npy fuzz target: (0, 6722330222111922528, 2) overflowed
  // xtensor's strides).
  if (nonzero > (unsigned __int128)(1) << 62) {
    throw BadInput(fmt::format("{} {}: shape {} is too large (its non-zero dimensions hold more than 2^62 elements)",
                               flag, path, tuple));
  }
  return shape;
}
}  // namespace

F32Tensor load_f32_tensor(const std::string& path, const std::string& flag) {
  std::error_code ec;
  check_input_file(path, flag + " " + path);
  const uint64_t header = npy_header_bytes(path, flag);
  const std::vector<uint64_t> shape = npy_shape(path, flag, header, std::filesystem::file_size(path, ec));
  // The data: row-major little-endian float32, exactly the bytes after the header (npy_shape checked the count).
  // Read here rather than by xt::load_npy, which takes the 1.0 header length's bytes as signed chars and misreads
  // every length whose low byte is 0x80 or more (e.g. 182), refusing a valid file (found by the npy fuzz target).
  F32Tensor t;
  t.shape.assign(shape.begin(), shape.end());
  uint64_t elements = 1;
  for (const uint64_t d : shape) elements *= d;
  t.bits.resize(elements);
  std::ifstream in(path, std::ios::binary);
  in.seekg(std::streamoff(header));
  if (elements > 0) in.read(reinterpret_cast<char*>(t.bits.data()), std::streamsize(elements * 4));
  if (!in) throw BadInput(fmt::format("{} {}: cannot read the array's {} bytes", flag, path, elements * 4));
  return t;
}

F32Matrix load_f32_matrix(const std::string& path, const std::string& flag) {
  F32Tensor t = load_f32_tensor(path, flag);
  if (t.shape.size() != 2) {
    throw BadInput(fmt::format("{} {}: expected a 2-D array, got {} dimensions", flag, path, t.shape.size()));
  }
  return {t.shape[0], t.shape[1], std::move(t.bits)};
}

void save_f32_tensor(const std::string& path, const std::string& flag, const F32Tensor& t) {
  std::vector<size_t> shape(t.shape.begin(), t.shape.end());
  xt::xarray<float> a = xt::zeros<float>(shape);
  if (!t.bits.empty()) std::memcpy(a.data(), t.bits.data(), t.bits.size() * 4);
  const std::string bytes = xt::dump_npy(a);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw BadInput(fmt::format("{} {}: cannot open for writing", flag, path));
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.flush();
  out.close();
  if (!out) {
    // A full disk or a file size limit: leave no truncated .npy behind (but never remove a device such as /dev/full).
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);
    throw BadInput(fmt::format("{} {}: write failed", flag, path));
  }
}

void save_f32_matrix(const std::string& path, const std::string& flag, const F32Matrix& m) {
  save_f32_tensor(path, flag, {{m.rows, m.cols}, m.bits});
}

}  // namespace trnsim::tool
