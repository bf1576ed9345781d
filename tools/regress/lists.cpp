// The lists file (format in tests/regress/lists.txt's header), seed derivation and the run plan.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "tools/regress/regress.h"

namespace trnsim::regress {
namespace {

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-' || c == '.'; });
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// A positive decimal integer, else -1.
long positive(const std::string& s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    return -1;
  const long v = std::stol(s);
  return v > 0 ? v : -1;
}

}  // namespace

const ListDecl* ListsFile::find_list(const std::string& name) const {
  for (const ListDecl& l : lists)
    if (l.name == name) return &l;
  return nullptr;
}

std::vector<const Entry*> ListsFile::entries_of(const std::string& list) const {
  std::vector<const Entry*> out;
  for (const Entry& e : entries)
    if (std::find(e.lists.begin(), e.lists.end(), list) != e.lists.end()) out.push_back(&e);
  return out;
}

std::string ListsFile::list_names() const {
  std::string s;
  for (const ListDecl& l : lists) s += (s.empty() ? "" : ", ") + l.name;
  return s;
}

ListsFile read_lists(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the lists file");
  ListsFile f;
  f.path = path;
  std::set<std::string> names;
  std::string text;
  int lineno = 0;
  auto fail = [&](const std::string& why) { throw UsageError(path + ":" + std::to_string(lineno) + ": " + why); };
  while (std::getline(in, text)) {
    ++lineno;
    if (const size_t hash = text.find('#'); hash != std::string::npos) text.erase(hash);
    std::istringstream words(text);
    std::vector<std::string> w;
    for (std::string t; words >> t;) w.push_back(t);
    if (w.empty()) continue;
    if (w[0] == "list") {
      if (w.size() < 2 || !valid_name(w[1])) fail("expected: list NAME [seeds=N]");
      if (f.find_list(w[1])) fail("list '" + w[1] + "' declared twice");
      ListDecl d{w[1], 1, lineno};
      for (size_t i = 2; i < w.size(); ++i) {
        if (w[i].rfind("seeds=", 0) == 0 && positive(w[i].substr(6)) > 0) {
          d.seeds = int(positive(w[i].substr(6)));
        } else {
          fail("unknown list option '" + w[i] + "' (expected seeds=N, N > 0)");
        }
      }
      f.lists.push_back(d);
      continue;
    }
    if (w.size() < 4) fail("expected: NAME LISTS BINARY GTEST_FILTER [timeout=SECONDS] [wave]");
    Entry e;
    e.line = lineno;
    e.name = w[0];
    if (!valid_name(e.name)) fail("entry name '" + e.name + "' may only use letters, digits, '_', '-', '.'");
    if (!names.insert(e.name).second) fail("entry '" + e.name + "' appears twice");
    e.lists = split(w[1], ',');
    for (const std::string& l : e.lists) {
      if (!f.find_list(l)) fail("list '" + l + "' is not declared (declare it above with: list " + l + " seeds=N)");
    }
    e.binary = w[2];
    if (e.binary.find('/') != std::string::npos || !valid_name(e.binary))
      fail("binary '" + e.binary + "' must be a plain file name in the bin directory");
    e.filter = w[3];
    for (size_t i = 4; i < w.size(); ++i) {
      if (w[i].rfind("timeout=", 0) == 0 && positive(w[i].substr(8)) > 0) {
        e.timeout_s = int(positive(w[i].substr(8)));
      } else if (w[i] == "wave") {
        e.wave = true;
      } else {
        fail("unknown entry option '" + w[i] + "' (expected timeout=SECONDS or wave)");
      }
    }
    f.entries.push_back(e);
  }
  if (f.lists.empty()) throw UsageError(path + ": declares no list");
  return f;
}

uint64_t derive_seed(uint64_t base, int i) {
  if (i == 0) return base;
  uint64_t z = base + 0x9E3779B97F4A7C15ull * uint64_t(i);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const uint64_t s = z & 0xFFFFFFFFull;
  return s == 0 ? 1 : s;
}

int count_tasks(size_t entries, int seeds, int chunk) {
  return int(entries) * ((seeds + chunk - 1) / chunk);
}

std::vector<Run> plan_runs(const std::vector<const Entry*>& entries, uint64_t base_seed, int seeds, int chunk,
                           int task) {
  std::vector<Run> runs;
  const int chunks_per_entry = chunk > 0 ? (seeds + chunk - 1) / chunk : 1;
  for (size_t e = 0; e < entries.size(); ++e) {
    int from = 0, to = seeds;
    if (chunk > 0 && task >= 0) {
      if (task / chunks_per_entry != int(e)) continue;
      from = (task % chunks_per_entry) * chunk;
      to = std::min(seeds, from + chunk);
    }
    for (int i = from; i < to; ++i) {
      Run r;
      r.entry = entries[e];
      r.seed_index = i;
      r.seed = derive_seed(base_seed, i);
      runs.push_back(r);
    }
  }
  return runs;
}

const char* status_name(Run::Status s) {
  switch (s) {
    case Run::Status::kPending: return "PENDING";
    case Run::Status::kPass: return "PASS";
    case Run::Status::kFail: return "FAIL";
    case Run::Status::kTimeout: return "TIMEOUT";
    case Run::Status::kCrash: return "CRASH";
    case Run::Status::kSkip: return "SKIP";
    case Run::Status::kError: return "ERROR";
    case Run::Status::kNotRun: return "NOT RUN";
  }
  return "?";
}

}  // namespace trnsim::regress
