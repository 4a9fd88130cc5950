#include "reports/reporter_registry.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <utility>

#include "reports/html_reporter.h"
#include "reports/json_reporter.h"
#include "reports/junit_reporter.h"
#include "reports/markdown_reporter.h"

namespace lockstep {
namespace {

using Factory = std::function<std::unique_ptr<Reporter>()>;

const std::vector<std::pair<std::string, Factory>>& Factories() {
  static const auto* factories = new std::vector<std::pair<std::string, Factory>>{
      {"json", [] { return std::make_unique<JsonReporter>(); }},
      {"junit", [] { return std::make_unique<JunitReporter>(); }},
      {"markdown", [] { return std::make_unique<MarkdownReporter>(); }},
      {"html", [] { return std::make_unique<HtmlReporter>(); }},
  };
  return *factories;
}

}  // namespace

std::vector<std::string> ReporterNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Factories()) names.push_back(name);
  return names;
}

Result<std::unique_ptr<Reporter>> MakeReporter(const std::string& name) {
  for (const auto& [known, factory] : Factories()) {
    if (known == name) return factory();
  }
  std::string known_names;
  for (const std::string& n : ReporterNames()) known_names += (known_names.empty() ? "" : ", ") + n;
  return NotFoundError("unknown report format \"" + name + "\" (known: " + known_names + ")");
}

Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return IoError(tmp + ": cannot open for writing: " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      out.close();
      std::remove(tmp.c_str());
      return IoError(tmp + ": write failed: " + why);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return IoError("cannot rename " + tmp + " to " + path + ": " + why);
  }
  return Status::Ok();
}

Status RenderToFile(const Reporter& reporter, const RunResult& result, const std::string& path) {
  std::ostringstream text;
  Status status = reporter.Render(result, text);
  if (!status.ok()) return status.WithContext(reporter.name() + " report " + path);
  return WriteFileAtomically(path, text.str());
}

}  // namespace lockstep
