// What the fuzz targets (tests/fuzz/fuzz_*.cpp, docs/verification.md "Fuzzing") share: how a target reports a
// finding, and a fuzz input as a file for readers that take a path.
//
// A finding is anything but the documented outcome of an input: a crash or sanitizer report (libFuzzer sees those
// itself), an exception of a type the surface does not document, or a round trip that does not hold. fail() prints
// one line naming the surface and aborts, so libFuzzer keeps the input as a crash artifact.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/core.h>

namespace trnsim::fuzz {

template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  std::fprintf(stderr, "fuzz finding: %s\n", fmt::format(format, std::forward<Args>(args)...).c_str());
  std::abort();
}

/// Fields of an input, front to back, little-endian; past the end every field reads 0 and bytes() returns what is
/// left. Front to back (unlike FuzzedDataProvider) so that seed files are easy to write by hand or script
/// (tests/fuzz/corpus/README.md gives each target's layout).
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ == end_; }
  template <class T>
  T take() {
    T v{};
    const size_t n = std::min(sizeof(T), size_t(end_ - p_));
    std::memcpy(&v, p_, n);
    p_ += n;
    return v;
  }
  /// A byte's value in 0..n-1.
  unsigned below(unsigned n) { return take<uint8_t>() % n; }
  std::vector<uint8_t> bytes(size_t n) {
    n = std::min(n, size_t(end_ - p_));
    std::vector<uint8_t> v(p_, p_ + n);
    p_ += n;
    return v;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

/// The input as a file, for readers that open a path: an anonymous memory file (memfd), reached as
/// /proc/self/fd/N. Closed (and gone) when this object is.
class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size) : fd_(memfd_create("fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) fail("memfd_create failed");
    for (size_t done = 0; done < size;) {
      const ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0) fail("writing the memfd failed");
      done += size_t(n);
    }
  }
  ~InputFile() { close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

}  // namespace trnsim::fuzz
