// JUnit XML as Jenkins (junit step) and GitLab (artifacts:reports:junit) read it: <testsuites> with one
// <testsuite> per list entry and one <testcase> per seed; <failure> for a failed test, <error> for a timeout, crash
// or a run that could not start. The merge reads back only files this tool wrote.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tools/regress/regress.h"

namespace trnsim::regress {
namespace {

namespace fs = std::filesystem;

// Length of the well-formed UTF-8 sequence at s[i], 0 if there is none.
size_t utf8_length(const std::string& s, size_t i) {
  const unsigned char c = s[i];
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = s[i];
    if (c >= 0x80) {  // keep well-formed UTF-8, replace other bytes (test output may hold anything)
      const size_t n = utf8_length(s, i);
      if (n == 0) {
        o += '?';
      } else {
        o += s.substr(i, n);
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      case '\n': o += "\n"; break;
      case '\t': o += "\t"; break;
      case '\r': break;
      default:
        if (c < 0x20 || c == 0x7F) {
          o += '?';  // not allowed in XML 1.0
        } else {
          o += char(c);
        }
    }
  }
  return o;
}

// An attribute value: newlines as character references so that readers keep them.
std::string attr_escape(const std::string& s) {
  std::string o;
  for (char c : xml_escape(s)) o += c == '\n' ? std::string("&#10;") : std::string(1, c);
  return o;
}

std::string xml_unescape(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      o += s[i];
      continue;
    }
    static const std::pair<const char*, char> ents[] = {{"&amp;", '&'}, {"&lt;", '<'},   {"&gt;", '>'},
                                                        {"&quot;", '"'}, {"&apos;", '\''}, {"&#10;", '\n'}};
    bool done = false;
    for (const auto& [e, c] : ents) {
      if (s.compare(i, std::strlen(e), e) == 0) {
        o += c;
        i += std::strlen(e) - 1;
        done = true;
        break;
      }
    }
    if (!done) o += '&';
  }
  return o;
}

std::string seconds3(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// Creates the missing parent directories of `path` (none missing is no error); false (with ec set) if they cannot be
// made.
bool make_parents(const std::string& path, std::error_code& ec) {
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  return !ec;
}

void write_text(const std::string& path, const std::string& text) {
  std::error_code ec;
  make_parents(path, ec);  // a failure shows as the write's own below
  // Written beside and renamed, so that a reader (or a merge job) never sees half a file.
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << text;
    out.close();
    if (!out) throw UsageError(path + ": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw UsageError(path + ": cannot write");
}

}  // namespace

void check_output_file(const std::string& option, const std::string& path) {
  const std::string what = option + " " + path + ": ";
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw UsageError(what + "is a directory");
  if (!make_parents(path, ec))
    throw UsageError(what + "cannot create its directory " + fs::path(path).parent_path().string() + " (" +
                     ec.message() + ")");
  const bool existed = fs::exists(path, ec);
  if (!std::ofstream(path, std::ios::app)) throw UsageError(what + "cannot open for writing");
  if (!existed) fs::remove(path, ec);
}

namespace {

// ---- reading back ---------------------------------------------------------------------------------------------
std::string attr(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const size_t p = tag.find(key);
  if (p == std::string::npos) return "";
  const size_t b = p + key.size();
  const size_t e = tag.find('"', b);
  return e == std::string::npos ? "" : tag.substr(b, e - b);
}

struct Suite {
  std::string name;  // escaped, as read
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double time = 0.0;
  std::string timestamp, hostname;
  std::string properties;  // "<properties>...</properties>" or empty
  std::string cases;       // the <testcase> elements
};

struct Totals {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double time = 0.0;
};

std::string suite_xml(const Suite& s) {
  std::string o = "  <testsuite name=\"" + s.name + "\" tests=\"" + std::to_string(s.tests) + "\" failures=\"" +
                  std::to_string(s.failures) + "\" errors=\"" + std::to_string(s.errors) + "\" skipped=\"" +
                  std::to_string(s.skipped) + "\" time=\"" + seconds3(s.time) + "\" timestamp=\"" + s.timestamp +
                  "\" hostname=\"" + s.hostname + "\">\n";
  if (!s.properties.empty()) o += "    " + s.properties + "\n";
  o += s.cases;
  o += "  </testsuite>\n";
  return o;
}

std::string document(const std::string& name, const std::vector<Suite>& suites) {
  Totals t;
  for (const Suite& s : suites) {
    t.tests += s.tests;
    t.failures += s.failures;
    t.errors += s.errors;
    t.skipped += s.skipped;
    t.time += s.time;
  }
  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" + name + "\" tests=\"" +
                  std::to_string(t.tests) + "\" failures=\"" + std::to_string(t.failures) + "\" errors=\"" +
                  std::to_string(t.errors) + "\" skipped=\"" + std::to_string(t.skipped) + "\" time=\"" +
                  seconds3(t.time) + "\">\n";
  for (const Suite& s : suites) o += suite_xml(s);
  o += "</testsuites>\n";
  return o;
}

std::vector<Suite> parse_file(const std::string& path, std::string* doc_name) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string x = ss.str();
  const size_t root = x.find("<testsuites");
  const size_t root_end = x.find("</testsuites>");
  if (x.rfind("<?xml", 0) != 0 || root == std::string::npos || root_end == std::string::npos)
    throw UsageError(path + ": not a JUnit file written by trnsim_regress (no <testsuites> ... </testsuites>)");
  if (doc_name) *doc_name = attr(x.substr(root, x.find('>', root) - root), "name");
  std::vector<Suite> out;
  size_t p = root;
  while ((p = x.find("<testsuite ", p)) != std::string::npos && p < root_end) {
    const size_t tag_end = x.find('>', p);
    const size_t end = x.find("</testsuite>", tag_end);
    if (tag_end == std::string::npos || end == std::string::npos)
      throw UsageError(path + ": unterminated <testsuite>");
    const std::string tag = x.substr(p, tag_end - p);
    Suite s;
    s.name = attr(tag, "name");
    s.tests = std::atoi(attr(tag, "tests").c_str());
    s.failures = std::atoi(attr(tag, "failures").c_str());
    s.errors = std::atoi(attr(tag, "errors").c_str());
    s.skipped = std::atoi(attr(tag, "skipped").c_str());
    s.time = std::atof(attr(tag, "time").c_str());
    s.timestamp = attr(tag, "timestamp");
    s.hostname = attr(tag, "hostname");
    std::string inner = x.substr(tag_end + 1, end - tag_end - 1);
    const size_t pb = inner.find("<properties>");
    const size_t pe = inner.find("</properties>");
    if (pb != std::string::npos && pe != std::string::npos) {
      s.properties = inner.substr(pb, pe + 13 - pb);
      inner.erase(pb, pe + 13 - pb);
    }
    // Keep the <testcase> elements, one per line as written.
    const size_t first = inner.find("<testcase ");
    s.cases = first == std::string::npos ? "" : "    " + inner.substr(first);
    while (!s.cases.empty() && (s.cases.back() == ' ' || s.cases.back() == '\n')) s.cases.pop_back();
    if (!s.cases.empty()) s.cases += "\n";
    out.push_back(std::move(s));
    p = end;
  }
  return out;
}

// "suite testcase: message" for every <failure> / <error> in `s`.
void failure_lines(const Suite& s, std::vector<std::string>& lines) {
  size_t p = 0;
  while ((p = s.cases.find("<testcase ", p)) != std::string::npos) {
    const size_t tag_end = s.cases.find('>', p);
    if (tag_end == std::string::npos) break;
    const std::string tag = s.cases.substr(p, tag_end - p);
    size_t next = s.cases.find("<testcase ", tag_end);
    const std::string body = s.cases.substr(tag_end, next == std::string::npos ? std::string::npos : next - tag_end);
    for (const char* kind : {"<failure ", "<error "}) {
      const size_t f = body.find(kind);
      if (f == std::string::npos) continue;
      const std::string ftag = body.substr(f, body.find('>', f) - f);
      lines.push_back(xml_unescape(s.name) + " " + xml_unescape(attr(tag, "name")) + ": " +
                      xml_unescape(attr(ftag, "message")));
    }
    p = tag_end;
  }
}

}  // namespace

void write_junit(const std::string& path, const std::vector<Run>& runs, const JunitInfo& info) {
  std::vector<Suite> suites;
  std::map<const Entry*, size_t> index;
  const std::string stamp = iso_now(), host = xml_escape(host_name());
  for (const Run& r : runs) {
    auto it = index.find(r.entry);
    if (it == index.end()) {
      Suite s;
      s.name = attr_escape(r.entry->name);
      s.timestamp = stamp;
      s.hostname = host;
      s.properties = "<properties><property name=\"binary\" value=\"" + attr_escape(r.entry->binary) +
                     "\"/><property name=\"gtest_filter\" value=\"" + attr_escape(r.entry->filter) +
                     "\"/><property name=\"list\" value=\"" + attr_escape(info.list) +
                     "\"/><property name=\"base_seed\" value=\"" + std::to_string(info.base_seed) + "\"/></properties>";
      index[r.entry] = suites.size();
      suites.push_back(s);
      it = index.find(r.entry);
    }
    Suite& s = suites[it->second];
    ++s.tests;
    s.time += r.seconds;
    std::string tc = "    <testcase name=\"seed=" + std::to_string(r.seed) + "\" classname=\"" +
                     attr_escape(info.list + "." + r.entry->name) + "\" time=\"" + seconds3(r.seconds) + "\"";
    if (r.status == Run::Status::kPass) {
      tc += "/>\n";
    } else if (r.status == Run::Status::kSkip) {
      ++s.skipped;
      tc += ">\n      <skipped message=\"" + attr_escape(r.reason) + "\"/>\n    </testcase>\n";
    } else {
      const bool failure = r.status == Run::Status::kFail;
      (failure ? s.failures : s.errors) += 1;
      const char* el = failure ? "failure" : "error";
      tc += ">\n      <" + std::string(el) + " type=\"" + status_name(r.status) + "\" message=\"" +
            attr_escape(r.reason + "; re-run: " + r.rerun) + "\">" +
            xml_escape("re-run: " + r.rerun + "\nlog: " + display_path(r.log_path) + "\n\n" + r.log_excerpt) + "</" +
            el + ">\n    </testcase>\n";
    }
    s.cases += tc;
  }
  write_text(path, document(attr_escape(info.suite_name), suites));
}

MergeSummary merge_junit(const std::vector<std::string>& inputs, const std::string& out, int expect) {
  std::vector<std::string> files;
  std::vector<int> missing;
  std::string missing_dir;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      if (expect >= 0) {
        for (int i = 0; i < expect; ++i) {
          const std::string f = (fs::path(in) / ("task-" + std::to_string(i) + ".xml")).string();
          if (fs::exists(f)) {
            files.push_back(f);
          } else {
            missing.push_back(i);
            missing_dir = in;
          }
        }
      } else {
        std::vector<std::string> found;
        for (const auto& de : fs::directory_iterator(in, ec))
          if (de.path().extension() == ".xml") found.push_back(de.path().string());
        std::sort(found.begin(), found.end());
        files.insert(files.end(), found.begin(), found.end());
      }
    } else if (fs::exists(in, ec)) {
      files.push_back(in);
    } else {
      throw UsageError(in + ": no such file or directory");
    }
  }
  if (files.empty() && missing.empty()) throw UsageError("merge: no JUnit files to merge");

  std::vector<Suite> merged;
  std::map<std::string, size_t> by_name;
  std::string name;
  for (const std::string& f : files) {
    std::string doc_name;
    for (Suite& s : parse_file(f, &doc_name)) {
      auto it = by_name.find(s.name);
      if (it == by_name.end()) {
        by_name[s.name] = merged.size();
        merged.push_back(std::move(s));
      } else {
        Suite& m = merged[it->second];
        m.tests += s.tests;
        m.failures += s.failures;
        m.errors += s.errors;
        m.skipped += s.skipped;
        m.time += s.time;
        m.cases += s.cases;
      }
    }
    if (name.empty()) name = doc_name;
  }
  if (!missing.empty()) {
    Suite s;
    s.name = "slurm_array_tasks";
    s.timestamp = iso_now();
    s.hostname = xml_escape(host_name());
    for (int i : missing) {
      ++s.tests;
      ++s.errors;
      const std::string file = (fs::path(missing_dir) / ("task-" + std::to_string(i) + ".xml")).string();
      s.cases += "    <testcase name=\"task-" + std::to_string(i) +
                 "\" classname=\"slurm.array\" time=\"0.000\">\n      <error type=\"MISSING\" message=\"" +
                 attr_escape("array task " + std::to_string(i) + " wrote no JUnit file (" + file +
                             "): it did not run or was killed (time limit, node failure, scancel); see its Slurm "
                             "log (--output ...%A_%a)") +
                 "\"/>\n    </testcase>\n";
    }
    merged.push_back(s);
  }
  write_text(out, document(name.empty() ? "trnsim-regress" : name, merged));

  MergeSummary sum;
  sum.files = int(files.size());
  sum.missing = int(missing.size());
  for (const Suite& s : merged) {
    sum.tests += s.tests;
    sum.failures += s.failures;
    sum.errors += s.errors;
    sum.skipped += s.skipped;
    failure_lines(s, sum.failure_lines);
  }
  return sum;
}

}  // namespace trnsim::regress
