#include "harness/cli/report_outputs.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "reports/github_annotations.h"
#include "reports/reporter_registry.h"

namespace lockstep {

void AddReportFlags(CLI::App& app, ReportOutputs& outputs) {
  app.add_option("--junit", outputs.junit, "Also write JUnit XML here (a testsuite per scenario, a testcase per checker)");
  app.add_option("--markdown", outputs.markdown,
                 "Also write a Markdown summary here (appended to $GITHUB_STEP_SUMMARY as well when that is set)");
  app.add_option("--html", outputs.html, "Also write a self-contained HTML report with plots here");
}

namespace {

Status Render(const std::string& name, const RunResult& result, const std::string& path) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<Reporter> reporter, MakeReporter(name));
  return RenderToFile(*reporter, result, path).WithContext(path);
}

}  // namespace

Status WriteReports(const RunResult& result, const ReportOutputs& outputs, std::ostream& out) {
  Status first;
  auto keep = [&](Status s) {
    if (first.ok() && !s.ok()) first = s;
  };
  if (outputs.write_json) {
    std::error_code ec;
    std::filesystem::create_directories(outputs.dir, ec);
    keep(Render("json", result, (outputs.dir / "report.json").string()));
  }
  if (!outputs.junit.empty()) keep(Render("junit", result, outputs.junit));
  if (!outputs.markdown.empty()) keep(Render("markdown", result, outputs.markdown));
  if (!outputs.html.empty()) keep(Render("html", result, outputs.html));

  if (const char* summary = std::getenv("GITHUB_STEP_SUMMARY"); summary && *summary) {
    Result<std::unique_ptr<Reporter>> md = MakeReporter("markdown");
    if (md.ok()) {
      std::ostringstream text;
      keep((*md)->Render(result, text));
      std::ofstream file(summary, std::ios::app);
      file << text.str();
      if (!file) keep(IoError(std::string("appending to $GITHUB_STEP_SUMMARY (") + summary + ")"));
    }
  }
  if (const char* gha = std::getenv("GITHUB_ACTIONS"); gha && std::string(gha) == "true") {
    WriteGithubAnnotations(result, out);
  }
  return first;
}

ExitCode ExitCodeFor(const RunResult& result) {
  bool failed = false;
  for (const auto& s : result.scenarios) {
    if (s.outcome == Outcome::kError) return ExitCode::kHarnessError;
    failed |= IsFailure(s.outcome);
  }
  return failed ? ExitCode::kCheckFailed : ExitCode::kPassed;
}

}  // namespace lockstep
