// Reader of Berkeley TestFloat vector files; see testfloat_file.h and shared/vectors/testfloat/FORMAT.md.
#include "tools/testfloat/testfloat_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>

#include <fmt/core.h>

namespace trnsim::testfloat {
namespace {

constexpr int kFlagsDigits = 2;
constexpr uint32_t kFlagsMask = 0x1F;

/// Parses one field of exactly `digits` hex digits (either case); std::nullopt if it is not that.
std::optional<uint32_t> parse_hex(std::string_view field, int digits) {
  if (static_cast<int>(field.size()) != digits) return std::nullopt;
  uint32_t value = 0;
  for (const char c : field) {
    uint32_t d;
    if (c >= '0' && c <= '9') {
      d = static_cast<uint32_t>(c - '0');
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<uint32_t>(c - 'A' + 10);
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<uint32_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    value = (value << 4) | d;
  }
  return value;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    if (pos >= line.size()) break;
    const size_t end = line.find_first_of(" \t", pos);
    const size_t stop = end == std::string_view::npos ? line.size() : end;
    fields.push_back(line.substr(pos, stop - pos));
    pos = stop;
  }
  return fields;
}

}  // namespace

std::vector<Field> standard_fields(const std::vector<int>& digits) {
  static const std::vector<std::vector<const char*>> kNames = {
      {"INPUT", "RESULT"}, {"A", "B", "RESULT"}, {"A", "B", "C", "RESULT"}};
  if (digits.size() < 2 || digits.size() > 4) {
    throw std::invalid_argument(fmt::format("testfloat: {} fields before FLAGS (expected 2 to 4)", digits.size()));
  }
  const std::vector<const char*>& names = kNames[digits.size() - 2];
  std::vector<Field> fields;
  for (size_t i = 0; i < digits.size(); ++i) fields.push_back(Field{names[i], digits[i]});
  return fields;
}

std::vector<Line> read_file(const std::string& path, const std::vector<int>& digits) {
  return read_file(path, standard_fields(digits));
}

std::vector<Line> read_file(const std::string& path, const std::vector<Field>& fields) {
  for (const Field& f : fields) {
    if (f.digits < 1 || f.digits > 8) {
      throw std::invalid_argument(fmt::format("testfloat: field {} has {} hex digits (expected 1 to 8)", f.name,
                                              f.digits));
    }
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw FormatError(fmt::format("{}: is a directory, not a vector file", path));
  }
  std::ifstream file(path);
  if (!file) throw FormatError(fmt::format("{}: cannot open vector file: {}", path, std::strerror(errno)));

  const int fields_expected = static_cast<int>(fields.size()) + 1;
  std::string layout;
  for (const Field& f : fields) layout += f.name + " ";
  layout += "FLAGS";

  std::vector<Line> lines;
  std::string text;
  int line_no = 0;
  while (std::getline(file, text)) {
    ++line_no;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    const std::vector<std::string_view> words = split_fields(text);
    if (words.empty()) continue;  // a blank or whitespace-only line (e.g. a trailing one)
    if (static_cast<int>(words.size()) != fields_expected) {
      throw FormatError(fmt::format("{}:{}: expected {} fields ({}), got {}", path, line_no, fields_expected,
                                    layout, words.size()));
    }
    Line line;
    line.line = line_no;
    line.fields.reserve(fields.size());
    for (int i = 0; i < fields_expected; ++i) {
      const bool is_flags = i == fields_expected - 1;
      const int digits = is_flags ? kFlagsDigits : fields[i].digits;
      const std::optional<uint32_t> value = parse_hex(words[i], digits);
      if (!value) {
        throw FormatError(fmt::format("{}:{}: field {} ({}) '{}' is not {} hex digits", path, line_no, i + 1,
                                      is_flags ? std::string("FLAGS") : fields[i].name, words[i], digits));
      }
      if (!is_flags) {
        line.fields.push_back(*value);
      } else if (*value > kFlagsMask) {
        throw FormatError(
            fmt::format("{}:{}: field {} (FLAGS) '{}' has bits outside 0x1F", path, line_no, i + 1, words[i]));
      } else {
        line.flags = *value;
      }
    }
    lines.push_back(std::move(line));
  }
  if (file.bad()) throw FormatError(fmt::format("{}: read error: {}", path, std::strerror(errno)));
  if (lines.empty()) throw FormatError(fmt::format("{}: no test vectors (empty file)", path));
  return lines;
}

}  // namespace trnsim::testfloat
