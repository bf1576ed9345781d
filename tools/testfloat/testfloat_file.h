// Reader of Berkeley TestFloat vector files (format: shared/vectors/testfloat/FORMAT.md, "Line format").
//
// One test case per line: hex fields separated by spaces (or tabs), then FLAGS, e.g. `A B RESULT FLAGS` for
// f32_add or `INPUT RESULT FLAGS` for a conversion. Every field has a fixed number of hex digits (FP32 = 8,
// FP16/BF16 = 4, FP8 = 2, FLAGS = 2), upper- or lower-case, without `0x`. A trailing '\r' is ignored.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim::testfloat {

/// A file that cannot be read or a line that does not follow the format. what() is one line without a trailing
/// newline: `FILE: reason` for the file as a whole, `FILE:LINE: reason` (LINE 1-based) for one line, naming the
/// field by number (1-based) and name, e.g. `f.tv:3: field 2 (B) '3F8000G0' is not 8 hex digits`.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One field of a line before FLAGS: its name in error messages (as FORMAT.md calls it) and its hex digit count.
struct Field {
  std::string name;
  int digits = 8;
};

/// One parsed line.
struct Line {
  int line = 0;                  ///< 1-based line number in the file
  std::vector<uint32_t> fields;  ///< the fields before FLAGS, in file order (inputs..., result), as raw bits
  uint32_t flags = 0;            ///< the FLAGS field: exception flags, 0x00..0x1F (FORMAT.md bit table)
};

/// The fields before FLAGS named as FORMAT.md names them, from their hex digit counts: 2 fields are
/// `INPUT RESULT` (conversions), 3 are `A B RESULT` (two-input arithmetic), 4 are `A B C RESULT` (mulAdd).
/// Throws std::invalid_argument for any other count or a digit count outside 1..8.
std::vector<Field> standard_fields(const std::vector<int>& digits);

/// Reads and validates all of `path`. `fields` describes the fields before FLAGS (FLAGS, always 2 hex digits, is
/// implied). Blank and whitespace-only lines are skipped; every other line must have exactly fields.size() + 1
/// fields, each of exactly its digit count of hex digits, and FLAGS must be <= 0x1F. Returns one Line per vector
/// line, in file order (Line::line is its 1-based line number in the file).
/// Throws FormatError (see above) on the first bad line, if `path` is a directory or cannot be opened or read,
/// or if it holds no lines.
std::vector<Line> read_file(const std::string& path, const std::vector<Field>& fields);

/// read_file(path, standard_fields(digits)): e.g. {8, 8, 8} for f32_add, {8, 4} for f32_to_f16, {8, 2} for
/// f32 -> FP8.
std::vector<Line> read_file(const std::string& path, const std::vector<int>& digits);

}  // namespace trnsim::testfloat
