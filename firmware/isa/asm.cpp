// trnsim ISA v0: program text, the assembler and the disassembler (syntax: docs/isa.md, "Program text").
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>

#include <fmt/core.h>
#include <fmt/format.h>

#include "firmware/isa/isa.h"

namespace trnsim::isa {
namespace {

constexpr MemSpace kAllSpaces[] = {MemSpace::kHbm, MemSpace::kSbuf, MemSpace::kPsum, MemSpace::kHost};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// One `key` or `key=value` argument of an instruction line.
struct Arg {
  std::string_view key;
  std::optional<std::string_view> value;
};

/// A text field of an instruction: `flag_group` is set for bare flags; the two flags of a group are exclusive
/// (sat/no_sat, rne/sr, acc/no_acc).
struct KeySpec {
  std::string_view key;
  std::string_view flag_group;  // empty: key=value field
  bool required = false;
};

std::vector<KeySpec> keys_of(Opcode op) {
  switch (op) {
    case Opcode::kNop:
    case Opcode::kHalt: return {};
    case Opcode::kSemSignal: return {{"sem", "", true}, {"value", "", false}, {"core", "", false}};
    case Opcode::kSemWait: return {{"sem", "", true}, {"value", "", true}};
    case Opcode::kDmaCopy:
    case Opcode::kPsumCopy:
      return {{"src", "", true},        {"dst", "", true},        {"type", "", false},    {"count", "", true},
              {"src_stride", "", false}, {"dst_stride", "", false}, {"sat", "sat", false}, {"no_sat", "sat", false},
              {"rne", "round", false},   {"sr", "round", false},    {"done_sem", "", false}};
    case Opcode::kLoadStationary:
      return {{"dtype", "", false}, {"sbuf", "", true}, {"k", "", true}, {"m", "", true}, {"scales", "", false}};
    case Opcode::kMultiplyMoving:
      return {{"dtype", "", false}, {"sbuf", "", true},     {"psum", "", true},     {"k", "", true},
              {"n", "", true},      {"acc", "acc", false}, {"no_acc", "acc", false}, {"scales", "", false}};
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
      return {{"dtype", "", false}, {"algorithm", "", false}, {"hbm", "", true}, {"count", "", true}};
    case Opcode::kSend:
    case Opcode::kRecv: return {{"peer", "", true}, {"hbm", "", true}, {"bytes", "", true}};
    default: break;
  }
  // Vector / Scalar tensor-op formats.
  std::vector<KeySpec> keys;
  const auto value = [&](std::string_view key, bool required) { keys.push_back({key, "", required}); };
  const auto operand = [&](int slot) {
    static constexpr std::string_view kNames[][3] = {{"out", "out_type", "out_stride"},
                                                     {"in0", "in0_type", "in0_stride"},
                                                     {"in1", "in1_type", "in1_stride"},
                                                     {"in2", "in2_type", "in2_stride"}};
    value(kNames[slot][0], true);
    value(kNames[slot][1], false);
    value(kNames[slot][2], false);
  };
  if (op == Opcode::kQuantizeMx) {  // out and scales are locations; no type=, no flags (rule 10's casts)
    return {{"dtype", "", true},  {"partitions", "", true}, {"free", "", true},       {"out", "", true},
            {"in0", "", true},    {"in0_type", "", false},  {"in0_stride", "", false}, {"scales", "", true}};
  }
  switch (op) {
    case Opcode::kTensorTensor: value("op", true); operand(0); operand(1); operand(2); break;
    case Opcode::kTensorScalar:
      value("op", true);
      value("imm0", true);
      value("op1", false);
      value("imm1", false);
      operand(0);
      operand(1);
      break;
    case Opcode::kTensorReduce: value("op", true); value("axis", false); operand(0); operand(1); break;
    case Opcode::kTensorCopy:
    case Opcode::kTranspose: operand(0); operand(1); break;
    case Opcode::kMemset: value("value", true); operand(0); break;
    case Opcode::kIota: value("base", false); value("pstep", false); value("step", false); operand(0); break;
    case Opcode::kSelect: operand(0); operand(1); operand(2); operand(3); break;
    case Opcode::kActivation:
      value("func", true);
      value("scale", false);
      value("scale_type", false);
      value("bias", false);
      value("bias_type", false);
      value("sum", false);
      value("sum_type", false);
      keys.push_back({"sum_acc", "sum_acc", false});  // a flag
      operand(0);
      operand(1);
      break;
    default: return {};
  }
  keys.push_back({"partitions", "", true});
  keys.push_back({"free", "", true});
  keys.push_back({"type", "", false});
  keys.push_back({"sat", "sat", false});
  keys.push_back({"no_sat", "sat", false});
  keys.push_back({"rne", "round", false});
  keys.push_back({"sr", "round", false});
  return keys;
}

/// Text key that sets an ISA field (docs/isa.md field names), for pointing at a validate() error.
std::string_view key_of_field(Opcode op, std::string_view field) {
  if (field == "src_type" || field == "dst_type") return "type";
  if (field == "src_space" || field == "src_addr") return "src";
  if (field == "dst_space" || field == "dst_addr") return "dst";
  if (field == "sbuf_addr") return "sbuf";
  if (field == "hbm_addr") return "hbm";
  if (field == "psum_addr") return "psum";
  if (field == "scale_addr") return "scales";
  if (field == "free_size") return op == Opcode::kLoadStationary ? "m" : "n";
  // Tensor-op operands: X_space, X_partition and X_offset are set by the location `X=SPACE:PART:OFFSET`.
  for (const std::string_view suffix : {"_space", "_partition", "_offset"}) {
    if (field.size() > suffix.size() && field.substr(field.size() - suffix.size()) == suffix) {
      return field.substr(0, field.size() - suffix.size());
    }
  }
  return field;
}

/// Parses one line; every error names its 1-based line and column.
class LineParser {
 public:
  LineParser(int line_no, std::string_view line) : line_no_(line_no), line_(line) {}

  [[noreturn]] void fail(std::string_view at, const std::string& message) const {
    const std::size_t col = at.data() >= line_.data() && at.data() <= line_.data() + line_.size()
                                ? static_cast<std::size_t>(at.data() - line_.data()) + 1
                                : 1;
    throw ProgramError(fmt::format("{}:{}: {}", line_no_, col, message));
  }

  /// Whitespace-separated tokens of the line without its comment; a token may hold spaces inside [...].
  std::vector<std::string_view> tokens() const {
    const std::string_view text = line_.substr(0, line_.find('#'));
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < text.size()) {
      if (is_space(text[i])) {
        ++i;
        continue;
      }
      const std::size_t start = i;
      int depth = 0;
      while (i < text.size() && (depth > 0 || !is_space(text[i]))) {
        depth += text[i] == '[' ? 1 : text[i] == ']' ? -1 : 0;
        ++i;
      }
      if (depth > 0) fail(text.substr(start), "unterminated '['");
      out.push_back(text.substr(start, i - start));
    }
    return out;
  }

  /// An unsigned number (decimal or 0x hex) in [0, max].
  uint64_t unsigned_number(std::string_view field, std::string_view s, uint64_t max) const {
    const auto v = parse_magnitude(s);
    if (!v) fail(s, fmt::format("{}: bad number '{}'", field, s));
    if (*v > max) fail(s, fmt::format("{}: value {} is out of range 0..{}", field, s, max));
    return *v;
  }

  /// A signed number (optional '-', decimal or 0x hex) in [min, max].
  int64_t signed_number(std::string_view field, std::string_view s, int64_t min, int64_t max) const {
    const bool negative = !s.empty() && s.front() == '-';
    const auto mag = parse_magnitude(negative ? s.substr(1) : s);
    if (!mag) fail(s, fmt::format("{}: bad number '{}'", field, s));
    const uint64_t limit = negative ? static_cast<uint64_t>(-(min + 1)) + 1 : static_cast<uint64_t>(max);
    if (*mag > limit) fail(s, fmt::format("{}: value {} is out of range {}..{}", field, s, min, max));
    return negative ? static_cast<int64_t>(0 - *mag) : static_cast<int64_t>(*mag);
  }

  /// A list "[a,b,...]" of 1..kApDims entries, spaces allowed around entries.
  std::vector<std::string_view> list(std::string_view field, std::string_view s) const {
    if (s.size() < 2 || s.front() != '[' || s.back() != ']') {
      fail(s, fmt::format("{}: expected a list [a,b,c,d], got '{}'", field, s));
    }
    std::vector<std::string_view> items;
    std::string_view rest = s.substr(1, s.size() - 2);
    while (true) {
      const std::size_t comma = rest.find(',');
      const std::string_view item = trim(rest.substr(0, comma));
      if (item.empty()) fail(rest.empty() ? s : rest, fmt::format("{}: empty list entry", field));
      items.push_back(item);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    if (items.size() > static_cast<std::size_t>(kApDims)) {
      fail(items[kApDims], fmt::format("{}: {} entries, at most {}", field, items.size(), kApDims));
    }
    return items;
  }

  DataType data_type(std::string_view field, std::string_view s) const {
    if (const auto t = parse_data_type(s)) return *t;
    fail(s, fmt::format("{}: '{}' is not a data type (bf16, fp16, fp8e4m3, fp8e5m2, fp32)", field, s));
  }

  Dtype dtype(std::string_view s) const {
    if (const auto dt = parse_dtype(s)) return *dt;
    fail(s, fmt::format("dtype: '{}' is not a dtype ({})", s, kTeDtypeNames));
  }

  /// "space:address", e.g. "sbuf:0x200".
  std::pair<MemSpace, uint64_t> location(std::string_view field, std::string_view s) const {
    const std::size_t colon = s.find(':');
    if (colon == std::string_view::npos) fail(s, fmt::format("{}: expected SPACE:ADDRESS, got '{}'", field, s));
    const std::string_view space = s.substr(0, colon);
    for (const MemSpace m : kAllSpaces) {
      if (mem_space_name(m) == space) {
        return {m, unsigned_number(field, s.substr(colon + 1), std::numeric_limits<uint64_t>::max())};
      }
    }
    fail(s, fmt::format("{}: '{}' is not a memory space (hbm, sbuf, psum, host)", field, space));
  }

  /// A tensor operand's location "space:partition:offset", e.g. "sbuf:32:0x200".
  std::tuple<MemSpace, uint16_t, uint32_t> operand_location(std::string_view field, std::string_view s) const {
    const std::size_t c1 = s.find(':');
    const std::size_t c2 = c1 == std::string_view::npos ? c1 : s.find(':', c1 + 1);
    if (c2 == std::string_view::npos) {
      fail(s, fmt::format("{}: expected SPACE:PARTITION:OFFSET, got '{}'", field, s));
    }
    const std::string_view space = s.substr(0, c1);
    for (const MemSpace m : kAllSpaces) {
      if (mem_space_name(m) == space) {
        const auto part = unsigned_number(field, s.substr(c1 + 1, c2 - c1 - 1), std::numeric_limits<uint16_t>::max());
        const auto off = unsigned_number(field, s.substr(c2 + 1), std::numeric_limits<uint32_t>::max());
        return {m, static_cast<uint16_t>(part), static_cast<uint32_t>(off)};
      }
    }
    fail(s, fmt::format("{}: '{}' is not a memory space (sbuf, psum)", field, space));
  }

  /// An FP32 immediate: a decimal number (1.5, -2e-3, inf, -inf, nan) or its bit pattern as 0x followed by
  /// 1..8 hex digits.
  uint32_t float_bits(std::string_view field, std::string_view s) const {
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      return static_cast<uint32_t>(unsigned_number(field, s, std::numeric_limits<uint32_t>::max()));
    }
    const std::string text(s);
    const bool plain = !text.empty() && text.find_first_not_of("0123456789+-.eEinfatyINFATY") == std::string::npos;
    char* end = nullptr;
    errno = 0;
    const float f = plain ? std::strtof(text.c_str(), &end) : 0.0f;
    if (!plain || end != text.c_str() + text.size() || text.find('x') != std::string::npos) {
      fail(s, fmt::format("{}: bad FP32 value '{}' (a decimal number, inf, nan or 0x bits)", field, s));
    }
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
  }

  AluOp alu_op(std::string_view field, std::string_view s) const {
    for (int i = 0; i < kNumAluOps; ++i) {
      if (alu_op_name(static_cast<AluOp>(i)) == s) return static_cast<AluOp>(i);
    }
    fail(s, fmt::format("{}: '{}' is not an ALU op (add, subtract, multiply, max, min, divide, is_equal, "
                        "not_equal, is_gt, is_ge, is_lt, is_le, rsubtract, rdivide, none)", field, s));
  }

  ActFunc act_func(std::string_view s) const {
    for (int i = 0; i < kNumActFuncs; ++i) {
      if (act_func_name(static_cast<ActFunc>(i)) == s) return static_cast<ActFunc>(i);
    }
    fail(s, fmt::format("func: '{}' is not an activation function (identity, relu, gelu_tanh, gelu, sigmoid, "
                        "tanh, exp, silu, rsqrt, reciprocal, square, log)", s));
  }

 private:
  static std::optional<uint64_t> parse_magnitude(std::string_view s) {
    unsigned base = 10;
    if (s.size() > 2 && s[0] == '0' && s[1] == 'x') {
      base = 16;
      s.remove_prefix(2);
    }
    if (s.empty()) return std::nullopt;
    uint64_t v = 0;
    for (const char c : s) {
      unsigned digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<unsigned>(c - '0');
      } else if (base == 16 && c >= 'a' && c <= 'f') {
        digit = static_cast<unsigned>(c - 'a' + 10);
      } else if (base == 16 && c >= 'A' && c <= 'F') {
        digit = static_cast<unsigned>(c - 'A' + 10);
      } else {
        return std::nullopt;
      }
      if (v > (std::numeric_limits<uint64_t>::max() - digit) / base) return std::nullopt;
      v = v * base + digit;
    }
    return v;
  }

  int line_no_;
  std::string_view line_;
};

/// The arguments of one instruction, checked against its KeySpecs (unknown, duplicate, flag/value misuse).
class Args {
 public:
  Args(const LineParser& p, std::string_view mnemonic, Opcode op, const std::vector<std::string_view>& tokens)
      : p_(p), mnemonic_(mnemonic), specs_(keys_of(op)) {
    for (std::size_t i = 1; i < tokens.size(); ++i) add(tokens[i]);
    for (const KeySpec& spec : specs_) {
      if (spec.required && !has(spec.key)) {
        p_.fail(mnemonic_, fmt::format("{}: missing field '{}'", mnemonic_, spec.key));
      }
    }
  }

  /// The value of `key`, or nullopt when the line does not set it.
  std::optional<std::string_view> get(std::string_view key) const {
    for (const Arg& a : args_) {
      if (a.key == key) return a.value;
    }
    return std::nullopt;
  }
  bool has(std::string_view key) const {
    return std::any_of(args_.begin(), args_.end(), [&](const Arg& a) { return a.key == key; });
  }
  /// Where the line sets `key` (for error columns); the mnemonic when it does not.
  std::string_view where(std::string_view key) const {
    for (const Arg& a : args_) {
      if (a.key == key) return a.key;
    }
    return mnemonic_;
  }

 private:
  void add(std::string_view token) {
    const std::size_t eq = token.find('=');
    Arg arg{token.substr(0, eq), std::nullopt};
    if (eq != std::string_view::npos) arg.value = token.substr(eq + 1);
    if (arg.key.empty()) p_.fail(token, fmt::format("{}: missing field name before '='", mnemonic_));
    const auto spec = std::find_if(specs_.begin(), specs_.end(), [&](const KeySpec& s) { return s.key == arg.key; });
    if (spec == specs_.end()) {
      p_.fail(arg.key, fmt::format("{}: unknown field '{}' (fields: {})", mnemonic_, arg.key, key_list()));
    }
    const bool flag = !spec->flag_group.empty();
    if (flag && arg.value) p_.fail(arg.key, fmt::format("{}: '{}' is a flag and takes no value", mnemonic_, arg.key));
    if (!flag && (!arg.value || arg.value->empty())) {
      p_.fail(arg.key, fmt::format("{}: field '{}' needs a value ({}=...)", mnemonic_, arg.key, arg.key));
    }
    for (const Arg& prev : args_) {
      const auto prev_spec = std::find_if(specs_.begin(), specs_.end(), [&](const KeySpec& s) {
        return s.key == prev.key;
      });
      if (prev.key == arg.key || (flag && prev_spec->flag_group == spec->flag_group)) {
        p_.fail(arg.key, fmt::format("{}: duplicate field '{}' (already set by '{}')", mnemonic_, arg.key, prev.key));
      }
    }
    args_.push_back(arg);
  }

  std::string key_list() const {
    std::string out;
    for (const KeySpec& s : specs_) out += (out.empty() ? "" : ", ") + std::string(s.key);
    return out.empty() ? "none" : out;
  }

  const LineParser& p_;
  std::string_view mnemonic_;
  std::vector<KeySpec> specs_;
  std::vector<Arg> args_;
};

/// Default stride of a copy side: dense row-major over count[] with elements of `bytes`, 0 where count is 1.
std::array<int32_t, kApDims> dense_strides(const LineParser& p, const Args& args, std::string_view field,
                                           const std::array<uint16_t, kApDims>& count, unsigned bytes) {
  std::array<int32_t, kApDims> out{};
  int64_t step = bytes;
  for (std::size_t d = 0; d < kApDims; ++d) {
    if (count[d] > 1) {
      if (step > std::numeric_limits<int32_t>::max()) {
        p.fail(args.where("count"), fmt::format("default {}[{}] = {} does not fit i32; set {} explicitly", field, d,
                                                step, field));
      }
      out[d] = static_cast<int32_t>(step);
      step *= count[d];
    }
  }
  return out;
}

std::array<int32_t, kApDims> strides(const LineParser& p, const Args& args, std::string_view field,
                                     const std::array<uint16_t, kApDims>& count, unsigned bytes) {
  const auto text = args.get(field);
  if (!text) return dense_strides(p, args, field, count, bytes);
  std::array<int32_t, kApDims> out{};
  const auto items = p.list(field, *text);
  for (std::size_t d = 0; d < items.size(); ++d) {
    out[d] = static_cast<int32_t>(p.signed_number(field, items[d], std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max()));
  }
  return out;
}

CopyFields parse_copy(const LineParser& p, const Args& args) {
  CopyFields c;
  std::tie(c.src_space, c.src_addr) = p.location("src", *args.get("src"));
  std::tie(c.dst_space, c.dst_addr) = p.location("dst", *args.get("dst"));
  if (const auto type = args.get("type")) {
    const std::size_t arrow = type->find("->");
    if (arrow == std::string_view::npos) {
      c.src_type = c.dst_type = p.data_type("type", *type);
    } else {
      c.src_type = p.data_type("type", type->substr(0, arrow));
      c.dst_type = p.data_type("type", type->substr(arrow + 2));
    }
  }
  const auto counts = p.list("count", *args.get("count"));
  for (std::size_t d = 0; d < counts.size(); ++d) {
    c.count[d] = static_cast<uint16_t>(p.unsigned_number("count", counts[d], std::numeric_limits<uint16_t>::max()));
  }
  c.src_stride = strides(p, args, "src_stride", c.count, data_type_bytes(c.src_type));
  c.dst_stride = strides(p, args, "dst_stride", c.count, data_type_bytes(c.dst_type));
  c.no_sat = args.has("no_sat");
  c.sr = args.has("sr");
  if (const auto done = args.get("done_sem")) {
    c.done_sem = static_cast<int>(p.unsigned_number("done_sem", *done, kNumSemaphores - 1));
  }
  return c;
}

TeFields parse_te(const LineParser& p, const Args& args, Opcode op) {
  constexpr uint64_t kU16 = std::numeric_limits<uint16_t>::max();
  constexpr uint64_t kU64 = std::numeric_limits<uint64_t>::max();
  TeFields t;
  if (const auto dt = args.get("dtype")) t.dtype = p.dtype(*dt);
  t.sbuf_addr = p.unsigned_number("sbuf", *args.get("sbuf"), kU64);
  t.k = static_cast<uint16_t>(p.unsigned_number("k", *args.get("k"), kU16));
  if (op == Opcode::kLoadStationary) {
    t.free_size = static_cast<uint16_t>(p.unsigned_number("m", *args.get("m"), kU16));
  } else {
    t.psum_addr = p.unsigned_number("psum", *args.get("psum"), kU64);
    t.free_size = static_cast<uint16_t>(p.unsigned_number("n", *args.get("n"), kU16));
    t.accumulate = args.has("acc");
  }
  if (const auto sc = args.get("scales")) t.scale_addr = p.unsigned_number("scales", *sc, kU64);
  return t;
}

CcFields parse_cc(const LineParser& p, const Args& args, Opcode op) {
  constexpr uint64_t kU64 = std::numeric_limits<uint64_t>::max();
  CcFields c;
  c.hbm_addr = p.unsigned_number("hbm", *args.get("hbm"), kU64);
  if (op == Opcode::kSend || op == Opcode::kRecv) {
    c.peer = static_cast<uint32_t>(p.unsigned_number("peer", *args.get("peer"), std::numeric_limits<uint32_t>::max()));
    c.count = p.unsigned_number("bytes", *args.get("bytes"), kU64);
    return c;
  }
  c.count = p.unsigned_number("count", *args.get("count"), kU64);
  if (const auto t = args.get("dtype")) {
    // Only the collective data types, with their own hint (not data_type()'s list of every type).
    if (*t == data_type_name(DataType::kFp32)) {
      c.dtype = DataType::kFp32;
    } else if (*t == data_type_name(DataType::kBf16)) {
      c.dtype = DataType::kBf16;
    } else {
      p.fail(*t, fmt::format("dtype: '{}' is not a collective data type (fp32, bf16)", *t));
    }
  }
  if (const auto a = args.get("algorithm")) {
    if (*a == "ring") {
      c.algorithm = CcAlgorithm::kRing;
    } else if (*a == "rhd") {
      c.algorithm = CcAlgorithm::kRhd;
    } else {
      p.fail(*a, fmt::format("algorithm: '{}' is not a collective algorithm (ring, rhd)", *a));
    }
  }
  return c;
}

/// The free counts [n0, n1] ("free=[n0,n1]"; a missing n1 is 1).
std::array<uint16_t, 2> free_counts(const LineParser& p, const Args& args) {
  const auto text = *args.get("free");
  const auto items = p.list("free", text);
  if (items.size() > 2) p.fail(items[2], fmt::format("free: {} entries, at most 2", items.size()));
  std::array<uint16_t, 2> out{1, 1};
  for (std::size_t d = 0; d < items.size(); ++d) {
    out[d] = static_cast<uint16_t>(p.unsigned_number("free", items[d], std::numeric_limits<uint16_t>::max()));
  }
  return out;
}

/// Default strides (elements) of an operand walking counts [c0, c1] densely; 0 where a count is 1.
std::array<int16_t, 2> dense_strides2(const LineParser& p, const Args& args, std::string_view key,
                                      std::array<uint32_t, 2> counts) {
  std::array<int16_t, 2> out{};
  int64_t step = 1;
  for (std::size_t d = 0; d < 2; ++d) {
    if (counts[d] > 1) {
      if (step > std::numeric_limits<int16_t>::max()) {
        p.fail(args.where("free"), fmt::format("default {}[{}] = {} does not fit i16; set {} explicitly", key, d,
                                               step, key));
      }
      out[d] = static_cast<int16_t>(step);
      step *= counts[d];
    }
  }
  return out;
}

/// One tensor operand `name` (out, in0, ...): location, `name_type` (else `type`, else fp32) and `name_stride`
/// (else dense over `counts`).
Operand parse_operand(const LineParser& p, const Args& args, const std::string& name, std::array<uint32_t, 2> counts,
                      bool column = false) {
  Operand o;
  std::tie(o.space, o.partition, o.offset) = p.operand_location(name, *args.get(name));
  if (const auto t = args.get(name + "_type")) {
    o.type = p.data_type(name + "_type", *t);
  } else if (const auto t = args.get("type"); t && !column) {
    o.type = p.data_type("type", *t);
  }
  if (column) return o;
  const std::string stride_key = name + "_stride";
  if (const auto text = args.get(stride_key)) {
    const auto items = p.list(stride_key, *text);
    if (items.size() > 2) p.fail(items[2], fmt::format("{}: {} entries, at most 2", stride_key, items.size()));
    for (std::size_t d = 0; d < items.size(); ++d) {
      o.stride[d] = static_cast<int16_t>(p.signed_number(stride_key, items[d], std::numeric_limits<int16_t>::min(),
                                                         std::numeric_limits<int16_t>::max()));
    }
  } else {
    o.stride = dense_strides2(p, args, stride_key, counts);
  }
  return o;
}

VecFields parse_vec(const LineParser& p, const Args& args, Opcode op) {
  VecFields v;
  v.partitions = static_cast<uint16_t>(
      p.unsigned_number("partitions", *args.get("partitions"), std::numeric_limits<uint16_t>::max()));
  v.free = free_counts(p, args);
  v.no_sat = args.has("no_sat");
  v.sr = args.has("sr");
  const std::array<uint32_t, 2> counts{v.free[0], v.free[1]};
  if (const auto o = args.get("op")) v.op = p.alu_op("op", *o);
  if (op == Opcode::kTensorScalar) {
    v.imm0 = p.float_bits("imm0", *args.get("imm0"));
    if (const auto o = args.get("op1")) v.op1 = p.alu_op("op1", *o);
    if (const auto i = args.get("imm1")) v.imm1 = p.float_bits("imm1", *i);
  }
  if (op == Opcode::kTensorReduce) {
    if (const auto a = args.get("axis")) {
      if (*a == "all") {
        v.axis = ReduceAxis::kAll;
      } else if (*a == "inner") {
        v.axis = ReduceAxis::kInner;
      } else {
        p.fail(*a, fmt::format("axis: '{}' is not a reduce axis (all, inner)", *a));
      }
    }
  }
  if (op == Opcode::kMemset) v.imm0 = p.float_bits("value", *args.get("value"));
  if (op == Opcode::kIota) {
    constexpr int64_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
    if (const auto b = args.get("base")) v.base = static_cast<int32_t>(p.signed_number("base", *b, kMin, kMax));
    if (const auto b = args.get("pstep")) v.pstep = static_cast<int32_t>(p.signed_number("pstep", *b, kMin, kMax));
    if (const auto text = args.get("step")) {
      const auto items = p.list("step", *text);
      if (items.size() > 2) p.fail(items[2], fmt::format("step: {} entries, at most 2", items.size()));
      for (std::size_t d = 0; d < items.size(); ++d) {
        v.step[d] = static_cast<int32_t>(p.signed_number("step", items[d], kMin, kMax));
      }
    }
  }
  // The output walks the input's free counts, except tensor_reduce ([P, 1] or [P, n1]) and transpose ([n0, P]).
  std::array<uint32_t, 2> out_counts = counts;
  if (op == Opcode::kTensorReduce) out_counts = {1, v.axis == ReduceAxis::kInner ? counts[1] : 1};
  if (op == Opcode::kTranspose) out_counts = {v.partitions, 1};
  if (op == Opcode::kQuantizeMx) {
    v.mx_dtype = p.dtype(*args.get("dtype"));
    std::tie(v.out.space, v.out.partition, v.out.offset) = p.operand_location("out", *args.get("out"));
    v.in0 = parse_operand(p, args, "in0", counts);
    std::tie(v.scales.space, v.scales.partition, v.scales.offset) = p.operand_location("scales", *args.get("scales"));
    return v;
  }
  v.out = parse_operand(p, args, "out", out_counts);
  if (args.has("in0")) v.in0 = parse_operand(p, args, "in0", counts);
  if (args.has("in1")) v.in1 = parse_operand(p, args, "in1", counts);
  if (args.has("in2")) v.in2 = parse_operand(p, args, "in2", counts);
  return v;
}

/// activation's `scale=` or `bias=` (`name`): an FP32 immediate, or SPACE:PARTITION:OFFSET for a [P, 1] column
/// (`tensor` true, the immediate 0, NAME_type its type); NAME_type without a column is an error naming its place.
void parse_imm_or_column(const LineParser& p, const Args& args, const std::string& name, bool* tensor, uint32_t* imm,
                         Operand* column) {
  if (const auto v = args.get(name)) {
    if (v->find(':') != std::string_view::npos) {
      *tensor = true;
      *imm = 0;
      *column = parse_operand(p, args, name, {1, 1}, true);
    } else {
      *imm = p.float_bits(name, *v);
    }
  }
  if (args.has(name + "_type") && !*tensor) {
    p.fail(args.where(name + "_type"),
           fmt::format("activation: {0}_type needs a {0} tensor ({0}=SPACE:PARTITION:OFFSET)", name));
  }
}

ActFields parse_act(const LineParser& p, const Args& args) {
  ActFields a;
  a.func = p.act_func(*args.get("func"));
  a.partitions = static_cast<uint16_t>(
      p.unsigned_number("partitions", *args.get("partitions"), std::numeric_limits<uint16_t>::max()));
  a.free = free_counts(p, args);
  a.no_sat = args.has("no_sat");
  a.sr = args.has("sr");
  const std::array<uint32_t, 2> counts{a.free[0], a.free[1]};
  parse_imm_or_column(p, args, "scale", &a.scale_tensor, &a.scale, &a.scale_ap);
  parse_imm_or_column(p, args, "bias", &a.bias_tensor, &a.bias, &a.bias_ap);
  if (args.has("sum")) {
    a.reduce = true;
    a.sum = parse_operand(p, args, "sum", {1, 1}, true);
  } else if (args.has("sum_type")) {
    p.fail(args.where("sum_type"), "activation: sum_type needs sum=SPACE:PARTITION:OFFSET");
  }
  a.sum_acc = args.has("sum_acc");
  if (a.sum_acc && !a.reduce) {
    p.fail(args.where("sum_acc"), "activation: sum_acc (continue the sum from the column's value) needs "
                                  "sum=SPACE:PARTITION:OFFSET");
  }
  a.out = parse_operand(p, args, "out", counts);
  a.in0 = parse_operand(p, args, "in0", counts);
  return a;
}

std::optional<Opcode> opcode_of(std::string_view mnemonic) {
  for (const Opcode op : kAllOpcodes) {
    if (opcode_name(op) == mnemonic) return op;
  }
  return std::nullopt;
}

std::string accepted_list(Engine engine) {
  std::string out;
  for (const Opcode op : kAllOpcodes) {
    if (engine_accepts(engine, op)) out += (out.empty() ? "" : ", ") + std::string(*opcode_name(op));
  }
  return out;
}

Instruction parse_instruction(const LineParser& p, const std::vector<std::string_view>& tokens) {
  const std::string_view mnemonic = tokens[0];
  Instruction instr;
  instr.op = *opcode_of(mnemonic);
  const Args args(p, mnemonic, instr.op, tokens);
  if (instr.op == Opcode::kSemSignal || instr.op == Opcode::kSemWait) {
    instr.sem.sem = static_cast<uint8_t>(p.unsigned_number("sem", *args.get("sem"), kNumSemaphores - 1));
    const auto value = args.get("value");
    instr.sem.value =
        value ? static_cast<uint32_t>(p.unsigned_number("value", *value, std::numeric_limits<uint32_t>::max())) : 1;
    if (const auto core = args.get("core")) instr.sem.core = int(p.unsigned_number("core", *core, kMaxCores - 1));
  } else if (instr.op == Opcode::kDmaCopy || instr.op == Opcode::kPsumCopy) {
    instr.copy = parse_copy(p, args);
  } else if (instr.op == Opcode::kLoadStationary || instr.op == Opcode::kMultiplyMoving) {
    instr.te = parse_te(p, args, instr.op);
  } else if (is_collective(instr.op)) {
    instr.cc = parse_cc(p, args, instr.op);
  } else if (instr.op == Opcode::kActivation) {
    instr.act = parse_act(p, args);
  } else if (is_tensor_op(instr.op)) {
    instr.vec = parse_vec(p, args, instr.op);
  }
  if (const auto err = validate(instr)) {
    p.fail(args.where(key_of_field(instr.op, err->field)), fmt::format("{}: {}", mnemonic, describe(*err)));
  }
  return instr;
}

std::string hex(uint64_t v) { return fmt::format("{:#x}", v); }

/// Canonical text of an FP32 immediate: a decimal of up to 9 significant digits (reads back to the same bits), or
/// the bit pattern for a NaN (so that its payload survives).
std::string float_text(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  if (f != f) return fmt::format("{:#010x}", bits);
  return fmt::format("{:.9g}", f);
}

std::string operand_text(std::string_view name, const Operand& o, bool column = false) {
  std::string out = fmt::format("{}={}:{}:{:#x} {}_type={}", name, mem_space_name(o.space), o.partition, o.offset,
                                name, data_type_name(o.type));
  if (!column) out += fmt::format(" {}_stride=[{},{}]", name, o.stride[0], o.stride[1]);
  return out;
}

std::string vec_text(std::string_view name, Opcode op, const VecFields& v) {
  std::string out(name);
  if (op == Opcode::kQuantizeMx) {
    return out + fmt::format(" dtype={} partitions={} free=[{},{}] out={}:{}:{:#x} {} scales={}:{}:{:#x}",
                             dtype_name(v.mx_dtype), v.partitions, v.free[0], v.free[1], mem_space_name(v.out.space),
                             v.out.partition, v.out.offset, operand_text("in0", v.in0),
                             mem_space_name(v.scales.space), v.scales.partition, v.scales.offset);
  }
  switch (op) {
    case Opcode::kTensorTensor: out += fmt::format(" op={}", alu_op_name(v.op)); break;
    case Opcode::kTensorScalar:
      out += fmt::format(" op={} imm0={} op1={} imm1={}", alu_op_name(v.op), float_text(v.imm0), alu_op_name(v.op1),
                         float_text(v.imm1));
      break;
    case Opcode::kTensorReduce:
      out += fmt::format(" op={} axis={}", alu_op_name(v.op), v.axis == ReduceAxis::kInner ? "inner" : "all");
      break;
    case Opcode::kMemset: out += fmt::format(" value={}", float_text(v.imm0)); break;
    case Opcode::kIota:
      out += fmt::format(" base={} pstep={} step=[{},{}]", v.base, v.pstep, v.step[0], v.step[1]);
      break;
    default: break;
  }
  out += fmt::format(" partitions={} free=[{},{}] {}", v.partitions, v.free[0], v.free[1], operand_text("out", v.out));
  if (op != Opcode::kMemset && op != Opcode::kIota) out += " " + operand_text("in0", v.in0);
  if (op == Opcode::kTensorTensor || op == Opcode::kSelect) out += " " + operand_text("in1", v.in1);
  if (op == Opcode::kSelect) out += " " + operand_text("in2", v.in2);
  out += v.no_sat ? " no_sat" : " sat";
  out += v.sr ? " sr" : " rne";
  return out;
}

std::string act_text(std::string_view name, const ActFields& a) {
  std::string out = fmt::format("{} func={} ", name, act_func_name(a.func));
  out += (a.scale_tensor ? operand_text("scale", a.scale_ap, true) : "scale=" + float_text(a.scale)) + " ";
  out += a.bias_tensor ? operand_text("bias", a.bias_ap, true) : "bias=" + float_text(a.bias);
  out += fmt::format(" partitions={} free=[{},{}] {} {}", a.partitions, a.free[0], a.free[1],
                     operand_text("out", a.out), operand_text("in0", a.in0));
  if (a.reduce) out += " " + operand_text("sum", a.sum, true) + (a.sum_acc ? " sum_acc" : "");
  out += a.no_sat ? " no_sat" : " sat";
  out += a.sr ? " sr" : " rne";
  return out;
}

template <typename T>
std::string list_text(const std::array<T, kApDims>& values) {
  return fmt::format("[{}]", fmt::join(values, ","));
}

}  // namespace

Program assemble(std::string_view text) {
  Program program;
  Engine queue = Engine::kTe;
  bool have_queue = false;
  int line_no = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    const LineParser p(line_no, line);
    const auto tokens = p.tokens();
    if (tokens.empty()) continue;
    const std::string_view head = tokens[0];
    if (head.front() == '.') {
      if (head != ".queue") p.fail(head, fmt::format("unknown directive '{}' (directives: .queue)", head));
      if (tokens.size() < 2) p.fail(head, ".queue: missing queue name (te, dma, act, vec, cc)");
      if (tokens.size() > 2) p.fail(tokens[2], fmt::format(".queue: unexpected '{}'", tokens[2]));
      const auto* e = std::find_if(std::begin(kAllEngines), std::end(kAllEngines),
                                   [&](Engine x) { return engine_name(x) == tokens[1]; });
      if (e == std::end(kAllEngines)) {
        p.fail(tokens[1], fmt::format(".queue: '{}' is not a queue (te, dma, act, vec, cc)", tokens[1]));
      }
      queue = *e;
      have_queue = true;
      continue;
    }
    const auto op = opcode_of(head);
    if (!op) p.fail(head, fmt::format("unknown mnemonic '{}'", head));
    if (!have_queue) p.fail(head, fmt::format("{} before any .queue directive", head));
    if (!engine_accepts(queue, *op)) {
      p.fail(head, fmt::format("{} is not accepted by the {} queue (it takes {})", head, engine_name(queue),
                               accepted_list(queue)));
    }
    program.queue(queue).push_back(parse_instruction(p, tokens));
  }
  return program;
}

std::string disassemble(const Instruction& instr) {
  const auto name = opcode_name(instr.op);
  if (!name) return fmt::format("<bad opcode {:#04x}>", static_cast<int>(instr.op));
  switch (instr.op) {
    case Opcode::kNop:
    case Opcode::kHalt: return std::string(*name);
    case Opcode::kSemSignal:
    case Opcode::kSemWait:
      return fmt::format("{} sem={} value={}{}", *name, instr.sem.sem, instr.sem.value,
                         instr.sem.core >= 0 ? fmt::format(" core={}", instr.sem.core) : "");
    case Opcode::kDmaCopy:
    case Opcode::kPsumCopy: {
      const CopyFields& c = instr.copy;
      return fmt::format("{} src={}:{} dst={}:{} type={}->{} count={} src_stride={} dst_stride={} {} {}{}", *name,
                         mem_space_name(c.src_space), hex(c.src_addr), mem_space_name(c.dst_space), hex(c.dst_addr),
                         data_type_name(c.src_type), data_type_name(c.dst_type), list_text(c.count),
                         list_text(c.src_stride), list_text(c.dst_stride), c.no_sat ? "no_sat" : "sat",
                         c.sr ? "sr" : "rne", c.done_sem >= 0 ? fmt::format(" done_sem={}", c.done_sem) : "");
    }
    case Opcode::kLoadStationary: {
      const TeFields& t = instr.te;
      return fmt::format("{} dtype={} sbuf={} k={} m={}{}", *name, dtype_name(t.dtype), hex(t.sbuf_addr), t.k,
                         t.free_size, is_mx(t.dtype) ? " scales=" + hex(t.scale_addr) : "");
    }
    case Opcode::kMultiplyMoving: {
      const TeFields& t = instr.te;
      return fmt::format("{} dtype={} sbuf={} psum={} k={} n={} {}{}", *name, dtype_name(t.dtype), hex(t.sbuf_addr),
                         hex(t.psum_addr), t.k, t.free_size, t.accumulate ? "acc" : "no_acc",
                         is_mx(t.dtype) ? " scales=" + hex(t.scale_addr) : "");
    }
    case Opcode::kActivation: return act_text(*name, instr.act);
    case Opcode::kTensorTensor:
    case Opcode::kTensorScalar:
    case Opcode::kTensorReduce:
    case Opcode::kTensorCopy:
    case Opcode::kMemset:
    case Opcode::kIota:
    case Opcode::kSelect:
    case Opcode::kTranspose:
    case Opcode::kQuantizeMx: return vec_text(*name, instr.op, instr.vec);
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter: {
      const CcFields& c = instr.cc;
      return fmt::format("{} dtype={} algorithm={} hbm={} count={}", *name, data_type_name(c.dtype),
                         cc_algorithm_name(c.algorithm), hex(c.hbm_addr), c.count);
    }
    case Opcode::kSend:
    case Opcode::kRecv: {
      const CcFields& c = instr.cc;
      return fmt::format("{} peer={} hbm={} bytes={}", *name, c.peer, hex(c.hbm_addr), c.count);
    }
  }
  return std::string(*name);
}

std::string disassemble(const Program& program) {
  std::string out = "# trnsim ISA v0 program (canonical text; '# N' is the instruction index in its queue)\n";
  for (const Engine e : kAllEngines) {
    const auto& queue = program.queue(e);
    if (queue.empty()) continue;
    out += fmt::format(".queue {}\n", engine_name(e));
    for (std::size_t i = 0; i < queue.size(); ++i) out += fmt::format("{}  # {}\n", disassemble(queue[i]), i);
  }
  return out;
}

}  // namespace trnsim::isa
