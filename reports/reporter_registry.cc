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

struct Format {
  Factory make;
  std::string flag_help;  // empty: no command-line flag
};

// The one list of file reporters. Each names itself (Reporter::name()), so a name is written once.
const std::vector<Format>& Formats() {
  static const auto* formats = new std::vector<Format>{
      {[] { return std::make_unique<JsonReporter>(); }, ""},
      {[] { return std::make_unique<JunitReporter>(); },
       "Also write JUnit XML here (a testsuite per scenario, a testcase per checker)"},
      {[] { return std::make_unique<MarkdownReporter>(); },
       "Also write a Markdown summary here (appended to $GITHUB_STEP_SUMMARY as well when that is set)"},
      {[] { return std::make_unique<HtmlReporter>(); }, "Also write a self-contained HTML report with plots here"},
  };
  return *formats;
}

}  // namespace

std::vector<std::string> ReporterNames() {
  std::vector<std::string> names;
  for (const Format& format : Formats()) names.push_back(format.make()->name());
  return names;
}

std::vector<ReportFlag> ReportFileFlags() {
  std::vector<ReportFlag> flags;
  for (const Format& format : Formats()) {
    if (!format.flag_help.empty()) flags.push_back({format.make()->name(), format.flag_help});
  }
  return flags;
}

Result<std::unique_ptr<Reporter>> MakeReporter(const std::string& name) {
  for (const Format& format : Formats()) {
    std::unique_ptr<Reporter> reporter = format.make();
    if (reporter->name() == name) return reporter;
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
