// Fuzz target: the Berkeley TestFloat vector reader of `trnsim fpcheck --vectors` and the numerics tests
// (tools/testfloat/testfloat_file.h). The first input byte picks the field layout (the ones fpcheck uses:
// conversions 8->4, 8->2, 4->8, two-input 8 8 8, mulAdd 8 8 8 8); the rest is the file.
// Documented outcome: the lines, or testfloat::FormatError. Oracles: each line has its layout's field count, each
// field fits its digits, FLAGS <= 0x1F, line numbers increase.
#include <vector>

#include "tests/fuzz/fuzz_support.h"
#include "tools/testfloat/testfloat_file.h"

using namespace trnsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::vector<std::vector<int>> kLayouts = {{8, 4}, {8, 2}, {4, 8}, {2, 8}, {8, 8, 8}, {8, 8, 8, 8}};
  const std::vector<int>& digits = kLayouts[data[0] % kLayouts.size()];
  const fuzz::InputFile file(data + 1, size - 1);
  std::vector<testfloat::Line> lines;
  try {
    lines = testfloat::read_file(file.path(), digits);
  } catch (const testfloat::FormatError&) {
    return 0;
  }
  if (lines.empty()) fuzz::fail("testfloat: a file without lines was accepted");
  int last = 0;
  for (const testfloat::Line& l : lines) {
    if (l.fields.size() != digits.size()) fuzz::fail("testfloat: line {} has {} fields", l.line, l.fields.size());
    for (size_t i = 0; i < digits.size(); ++i) {
      if (digits[i] < 8 && l.fields[i] >> (4 * digits[i]) != 0) fuzz::fail("testfloat: line {} field too wide", l.line);
    }
    if (l.flags > 0x1F) fuzz::fail("testfloat: line {} FLAGS {:#x}", l.line, l.flags);
    if (l.line <= last) fuzz::fail("testfloat: line numbers {} then {}", last, l.line);
    last = l.line;
  }
  return 0;
}
