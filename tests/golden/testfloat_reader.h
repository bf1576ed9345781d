// Minimal reader of Berkeley TestFloat vector files for the golden tests (format: shared/vectors/testfloat/
// FORMAT.md). Files are read in place from TRNSIM_VECTORS_DIR (a compile definition set by tests/golden).
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim::test {

/// One vector line: the hex fields before FLAGS (inputs then result), parsed; FLAGS is ignored.
struct TfLine {
  int line = 0;
  std::vector<uint32_t> fields;  ///< inputs..., result
};

/// Full path of a vector file in the TestFloat directory.
inline std::string testfloat_path(const std::string& name) { return std::string(TRNSIM_VECTORS_DIR) + "/" + name; }

/// Reads every line of `path`; each must hold `fields` hex fields plus FLAGS. Throws std::runtime_error naming the
/// file and line on anything else, or if the file cannot be opened or is empty.
inline std::vector<TfLine> read_testfloat(const std::string& path, size_t fields) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<TfLine> out;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    std::istringstream words(text);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.size() != fields + 1) throw std::runtime_error(path + ":" + std::to_string(line) + ": bad field count");
    TfLine tl;
    tl.line = line;
    for (size_t i = 0; i < fields; ++i) tl.fields.push_back(static_cast<uint32_t>(std::stoul(w[i], nullptr, 16)));
    out.push_back(tl);
  }
  if (out.empty()) throw std::runtime_error(path + ": no vectors");
  return out;
}

}  // namespace trnsim::test
