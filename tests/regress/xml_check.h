// A small XML well-formedness check for the JUnit files the runner writes (no XML library is a dependency): tags
// nest and close, attributes are name="value" and unique per element, '&' starts a known entity, no stray '<'.
// Returns the element counts by name; `error` names the first problem.
#pragma once

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace trnsim::regress_test {

struct XmlCheck {
  std::string error;                ///< empty when well-formed
  std::map<std::string, int> count; ///< elements by name
  std::string root;
};

inline bool valid_entity(const std::string& x, size_t amp) {
  for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
    if (x.compare(amp, std::string(e).size(), e) == 0) return true;
  if (x.compare(amp, 2, "&#") == 0) {
    size_t i = amp + 2;
    while (i < x.size() && std::isdigit(static_cast<unsigned char>(x[i]))) ++i;
    return i > amp + 2 && i < x.size() && x[i] == ';';
  }
  return false;
}

inline XmlCheck check_xml(const std::string& x) {
  XmlCheck r;
  auto fail = [&](size_t at, const std::string& why) {
    if (r.error.empty()) r.error = "offset " + std::to_string(at) + ": " + why;
  };
  size_t p = 0;
  if (x.rfind("<?xml", 0) == 0) p = x.find("?>") + 2;
  std::vector<std::string> stack;
  bool root_done = false;
  while (p < x.size() && r.error.empty()) {
    const size_t lt = x.find('<', p);
    const std::string text = x.substr(p, lt == std::string::npos ? std::string::npos : lt - p);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '&' && !valid_entity(text, i)) fail(p + i, "bad entity");
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(text[i]))) fail(p + i, "text outside the root");
    }
    if (lt == std::string::npos) break;
    if (x.compare(lt, 4, "<!--") == 0) {
      const size_t e = x.find("-->", lt);
      if (e == std::string::npos) fail(lt, "unterminated comment");
      p = e + 3;
      continue;
    }
    const size_t gt = x.find('>', lt);
    if (gt == std::string::npos) {
      fail(lt, "unterminated tag");
      break;
    }
    std::string tag = x.substr(lt + 1, gt - lt - 1);
    if (tag.find('<') != std::string::npos) fail(lt, "'<' inside a tag");
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) fail(lt, "closing </" + name + "> does not match");
      else stack.pop_back();
      if (stack.empty()) root_done = true;
    } else {
      const bool self = !tag.empty() && tag.back() == '/';
      if (self) tag.pop_back();
      size_t i = 0;
      while (i < tag.size() && !std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
      const std::string name = tag.substr(0, i);
      if (name.empty()) fail(lt, "empty element name");
      if (stack.empty() && root_done) fail(lt, "second root element");
      if (stack.empty()) r.root = name;
      ++r.count[name];
      std::set<std::string> attrs;
      while (i < tag.size() && r.error.empty()) {
        while (i < tag.size() && std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
        if (i >= tag.size()) break;
        const size_t eq = tag.find('=', i);
        if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"') {
          fail(lt, "attribute of <" + name + "> is not name=\"value\"");
          break;
        }
        const std::string an = tag.substr(i, eq - i);
        if (!attrs.insert(an).second) fail(lt, "attribute " + an + " twice");
        const size_t close = tag.find('"', eq + 2);
        if (close == std::string::npos) {
          fail(lt, "unterminated attribute value");
          break;
        }
        for (size_t k = eq + 2; k < close; ++k)
          if (tag[k] == '&' && !valid_entity(tag, k)) fail(lt, "bad entity in attribute " + an);
        i = close + 1;
      }
      if (!self) stack.push_back(name);
      else if (stack.empty()) root_done = true;
    }
    p = gt + 1;
  }
  if (r.error.empty() && !stack.empty()) r.error = "unclosed <" + stack.back() + ">";
  if (r.error.empty() && r.root.empty()) r.error = "no root element";
  return r;
}

}  // namespace trnsim::regress_test
