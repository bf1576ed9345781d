#include "tools/wave/vcd_declarations.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>

#include <sys/wait.h>

namespace trnsim::wave {

std::vector<VcdSignal> parse_vcd_declarations(const std::string& text) {
  std::vector<VcdSignal> out;
  std::vector<std::string> scope;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    if (tok == "$scope") {
      std::string kind, name;
      in >> kind >> name;
      scope.push_back(name);
    } else if (tok == "$upscope") {
      if (!scope.empty()) scope.pop_back();
    } else if (tok == "$var") {
      std::string kind, width, id, name, t;
      in >> kind >> width >> id >> name;
      VcdSignal s;
      while (in >> t && t != "$end") s.range = t;
      for (size_t i = 0; i < scope.size(); ++i) s.scope += (i ? "." : "") + scope[i];
      s.width = std::atoi(width.c_str());
      s.name = name;
      out.push_back(std::move(s));
    } else if (tok == "$enddefinitions") {
      break;
    }
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::optional<std::vector<VcdSignal>> read_fst_declarations(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(("fst2vcd " + shell_quote(path) + " 2>/dev/null").c_str(), "r"),
                                             pclose);
  if (!pipe) return std::nullopt;
  std::string header;
  char buf[8192];
  while (fgets(buf, sizeof buf, pipe.get()) != nullptr) {
    header += buf;
    if (header.find("$enddefinitions") != std::string::npos) break;
  }
  // Closing early ends fst2vcd with SIGPIPE; only "command not found" (127 from sh, nothing printed) means absent.
  const int status = pclose(pipe.release());
  if (header.empty() && status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127) return std::nullopt;
  return parse_vcd_declarations(header);
}

}  // namespace trnsim::wave
