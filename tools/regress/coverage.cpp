// trnsim_coverage: the per-block summary of `make coverage` (scripts/coverage, docs/verification.md "Coverage").
//
//   trnsim_coverage MERGED.dat [--root DIR] [--line-dat FILE] [--toggle-dat FILE]
//
// Reads one coverage file in Verilator's format (the merge of every test's counters, written by
// `verilator_coverage --write`), and prints a table with a row per RTL source file and a total per block (the
// directory under rtl/: fp, noc, te): line coverage (Verilator's line and branch points; a source line counts once,
// as hit when any point on it was hit, as genhtml counts it), toggle coverage (each bit's 0->1 and 1->0 points) and
// the functional points (`cover property`) hit out of the total, followed by the name of every point never hit.
// Cover points are reported on the row of the module they are bound to (trn_te_cover -> trn_te.sv); the bind files
// themselves (*_cover.sv) count for neither line nor toggle coverage. A point inside several instances or engine
// sizes counts once, hit when any of them hit it.
// --line-dat / --toggle-dat write the line (and branch) and toggle points, without the bind files, as two Verilator
// coverage files for `verilator_coverage --write-info` and genhtml.
// Exit status: 0 (the figures are printed whether or not the goals are met), 2 on bad usage or an unreadable file.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Point {
  std::map<std::string, std::string> keys;  // Verilator's key/value pairs (f, l, page, o, h, S, ...)
  unsigned long long count = 0;
  std::string raw;                          // the line as read, to write filtered files
};

// `C '<\001key\002value ...>' count`
bool parse_point(const std::string& line, Point& p) {
  if (line.size() < 4 || line.compare(0, 3, "C '") != 0) return false;
  const size_t end = line.rfind('\'');
  if (end == std::string::npos || end < 3) return false;
  const std::string body = line.substr(3, end - 3);
  p.count = std::strtoull(line.c_str() + end + 1, nullptr, 10);
  p.raw = line;
  size_t pos = 0;
  while (pos < body.size()) {
    if (body[pos] != '\001') return false;
    const size_t sep = body.find('\002', pos + 1);
    if (sep == std::string::npos) return false;
    size_t next = body.find('\001', sep + 1);
    if (next == std::string::npos) next = body.size();
    p.keys[body.substr(pos + 1, sep - pos - 1)] = body.substr(sep + 1, next - sep - 1);
    pos = next;
  }
  return true;
}

std::string get(const Point& p, const char* key) {
  const auto it = p.keys.find(key);
  return it == p.keys.end() ? std::string() : it->second;
}

// "v_line/trn_te" -> "v_line"
std::string page_kind(const Point& p) {
  const std::string page = get(p, "page");
  return page.substr(0, page.find('/'));
}
// "v_user/trn_te_cover__R4" -> "trn_te_cover" (Verilator names each parameterisation of a module NAME__<params>).
std::string page_module(const Point& p) {
  const std::string page = get(p, "page");
  const size_t slash = page.find('/');
  if (slash == std::string::npos) return std::string();
  const std::string module = page.substr(slash + 1);
  return module.substr(0, module.find("__"));
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The file's path from `root` on ("rtl/te/trn_te.sv"), or the path unchanged when it is not under root.
std::string relative(const std::string& path, const std::string& root) {
  const size_t at = path.find(root);
  return at == std::string::npos ? path : path.substr(at);
}

// "rtl/te/trn_te.sv" -> "te"
std::string block_of(const std::string& rel, const std::string& root) {
  std::string rest = rel.compare(0, root.size(), root) == 0 ? rel.substr(root.size()) : rel;
  const size_t slash = rest.find('/');
  return slash == std::string::npos ? std::string("(top)") : rest.substr(0, slash);
}

struct Tally {
  std::map<unsigned, bool> lines;      // one file: source line -> hit
  std::map<std::string, bool> toggles;  // one file: toggle point (line, column, signal bit, module) -> hit
  size_t extra_lines = 0, extra_hit = 0;  // totals: lines of the files added
  size_t toggle_total = 0, toggle_hit = 0;
  std::map<std::string, bool> points;  // cover point name -> hit
};

std::string pct(size_t hit, size_t total) {
  if (total == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(hit) / static_cast<double>(total));
  return buf;
}

size_t lines_total(const Tally& t) { return t.lines.size() + t.extra_lines; }
size_t lines_hit(const Tally& t) {
  size_t n = t.extra_hit;
  for (const auto& [line, hit] : t.lines) n += hit ? 1 : 0;
  return n;
}
size_t points_hit(const Tally& t) {
  size_t n = 0;
  for (const auto& [name, hit] : t.points) n += hit ? 1 : 0;
  return n;
}

void add(Tally& into, const Tally& from, const std::string& prefix) {
  into.extra_lines += lines_total(from);
  into.extra_hit += lines_hit(from);
  into.toggle_total += from.toggle_total;
  into.toggle_hit += from.toggle_hit;
  for (const auto& [name, hit] : from.points) into.points[prefix + ":" + name] = hit;
}

// The cover point's name: its hierarchy below the cover instance, i.e. the generate blocks and the label
// (e.g. "c_out_vc[2].c_vc[1].c_out"), so the same point of different engines, PEs or routers merges. The counters
// are written per instance (cosim/rtl_coverage.cpp), else Verilator would merge generate iterations already.
std::string point_name(const Point& p) {
  const std::string label = get(p, "o");
  const std::string hier = get(p, "h");
  const size_t at = hier.rfind("u_cover.");
  if (at == std::string::npos) return label;
  std::string inner = hier.substr(at + std::strlen("u_cover."));
  // Verilator escapes generate indices: "c_link__BRA__5__KET__" -> "c_link[5]".
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"__BRA__", "["}, {"__KET__", "]"}}) {
    for (size_t pos; (pos = inner.find(from)) != std::string::npos;) inner.replace(pos, from.size(), to);
  }
  return inner.empty() ? label : inner;
}

int usage(const char* why) {
  std::fprintf(stderr, "trnsim_coverage: %s\nusage: trnsim_coverage MERGED.dat [--root rtl/] [--line-dat FILE] "
                       "[--toggle-dat FILE]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, root = "rtl/", line_out, toggle_out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&](std::string& dst) {
      if (i + 1 >= argc) return false;
      dst = argv[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::printf("usage: trnsim_coverage MERGED.dat [--root rtl/] [--line-dat FILE] [--toggle-dat FILE]\n"
                  "Per-block line/toggle/functional coverage summary of a merged Verilator coverage file.\n");
      return 0;
    } else if (a == "--root") {
      if (!value(root)) return usage("--root needs a value");
    } else if (a == "--line-dat") {
      if (!value(line_out)) return usage("--line-dat needs a file");
    } else if (a == "--toggle-dat") {
      if (!value(toggle_out)) return usage("--toggle-dat needs a file");
    } else if (!a.empty() && a[0] == '-') {
      return usage(("unknown option " + a).c_str());
    } else if (input.empty()) {
      input = a;
    } else {
      return usage(("more than one input file: " + a).c_str());
    }
  }
  if (input.empty()) return usage("no coverage file given");
  std::ifstream in(input);
  if (!in) return usage(("cannot read " + input).c_str());

  std::map<std::string, Tally> files;  // rtl/... -> tally
  std::vector<std::string> line_raw, toggle_raw;
  std::string text;
  size_t n_points = 0, lineno = 0;
  while (std::getline(in, text)) {
    ++lineno;
    if (text.empty() || text[0] == '#') continue;
    Point p;
    if (!parse_point(text, p)) {
      std::fprintf(stderr, "trnsim_coverage: %s:%zu: not a Verilator coverage point\n", input.c_str(), lineno);
      return 2;
    }
    ++n_points;
    const std::string kind = page_kind(p);
    const std::string file = relative(get(p, "f"), root);
    if (kind == "v_user") {
      // Report on the module the cover module is bound to: trn_te_cover -> trn_te.sv next to it.
      std::string target = page_module(p);
      if (ends_with(target, "_cover")) target.resize(target.size() - 6);
      const std::string dir = file.substr(0, file.rfind('/') + 1);
      const std::string row = dir + target + ".sv";
      bool& hit = files[row].points[point_name(p)];
      hit = hit || p.count > 0;
      continue;
    }
    if (ends_with(file, "_cover.sv")) continue;  // verification code, not design
    Tally& t = files[file];
    if (kind == "v_line" || kind == "v_branch") {
      // A point covers the lines in S ("12-14,20") or else its line l.
      std::string span = get(p, "S");
      if (span.empty()) span = get(p, "l");
      size_t pos = 0;
      while (pos < span.size()) {
        size_t comma = span.find(',', pos);
        if (comma == std::string::npos) comma = span.size();
        const std::string part = span.substr(pos, comma - pos);
        const size_t dash = part.find('-');
        const unsigned lo = static_cast<unsigned>(std::strtoul(part.c_str(), nullptr, 10));
        const unsigned hi = dash == std::string::npos ? lo
                                                      : static_cast<unsigned>(std::strtoul(part.c_str() + dash + 1, nullptr, 10));
        for (unsigned l = lo; l <= hi && l - lo < 100000; ++l) t.lines[l] = t.lines[l] || p.count > 0;
        pos = comma + 1;
      }
      line_raw.push_back(p.raw);
    } else if (kind == "v_toggle") {
      // One point per signal bit of the source, hit when any instance toggled it (the file is per instance).
      bool& hit = t.toggles[get(p, "l") + ":" + get(p, "n") + ":" + get(p, "o") + ":" + page_module(p)];
      hit = hit || p.count > 0;
      toggle_raw.push_back(p.raw);
    }
  }
  if (n_points == 0) return usage(("no coverage points in " + input).c_str());
  for (auto& [file, t] : files) {
    for (const auto& [key, hit] : t.toggles) {
      ++t.toggle_total;
      t.toggle_hit += hit ? 1 : 0;
    }
  }

  const auto write = [](const std::string& path, const std::vector<std::string>& lines) {
    if (path.empty()) return true;
    std::ofstream out(path);
    out << "# SystemC::Coverage-3\n";
    for (const std::string& l : lines) out << l << '\n';
    return static_cast<bool>(out);
  };
  if (!write(line_out, line_raw) || !write(toggle_out, toggle_raw)) return usage("cannot write the filtered files");

  // Table: files grouped by block, a total per block, then the grand total.
  std::map<std::string, std::vector<std::string>> blocks;
  for (const auto& [file, t] : files) blocks[block_of(file, root)].push_back(file);
  const auto row = [](const std::string& name, const Tally& t) {
    const std::string pts = t.points.empty() ? std::string("-")
                                             : std::to_string(points_hit(t)) + "/" + std::to_string(t.points.size());
    std::printf("  %-34s %7s %7s %9s %7s %11s\n", name.c_str(), pct(lines_hit(t), lines_total(t)).c_str(),
                (std::to_string(lines_hit(t)) + "/" + std::to_string(lines_total(t))).c_str(),
                pct(t.toggle_hit, t.toggle_total).c_str(),
                t.toggle_total ? std::to_string(t.toggle_total).c_str() : "-", pts.c_str());
  };
  std::printf("  %-34s %7s %7s %9s %7s %11s\n", "block / file", "line", "lines", "toggle", "bits", "cover pts");
  Tally total;
  std::vector<std::string> missed;
  for (const auto& [block, list] : blocks) {
    Tally sum;
    for (const std::string& f : list) {
      const Tally& t = files.at(f);
      row(f, t);
      add(sum, t, f);
      for (const auto& [name, hit] : t.points)
        if (!hit) missed.push_back(f + ": " + name);
    }
    row("[" + block + "]", sum);
    add(total, sum, "[" + block + "]");
    std::printf("\n");
  }
  row("[total]", total);
  std::printf("\n");
  const size_t lh = lines_hit(total), lt = lines_total(total);
  const bool line_goal = lt > 0 && lh * 10 >= lt * 9;
  std::printf("line coverage %s (goal >= 90%%): %s\n", pct(lh, lt).c_str(), line_goal ? "met" : "NOT MET");
  std::printf("functional points %zu/%zu hit: %s\n", points_hit(total), total.points.size(),
              missed.empty() ? "all hit" : "NOT ALL HIT");
  for (const std::string& m : missed) std::printf("  not hit: %s\n", m.c_str());
  return 0;
}
