#include "harness/cli/report_outputs.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "harness/runner/run_directory.h"
#include "reports/github_annotations.h"
#include "reports/reporter_registry.h"

namespace lockstep {

void AddReportFlags(CLI::App& app, ReportOutputs& outputs) {
  for (const ReportFlag& flag : ReportFileFlags()) app.add_option("--" + flag.format, outputs.files[flag.format], flag.help);
}

namespace {

Status Render(const std::string& name, const RunResult& result, const std::string& path) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<Reporter> reporter, MakeReporter(name));
  return RenderToFile(*reporter, result, path).WithContext(path);
}

}  // namespace

Status CheckReportFiles(const ReportOutputs& outputs, const std::filesystem::path& run_dir,
                        const std::vector<std::string>& ids) {
  std::vector<std::pair<std::string, std::string>> requested;
  for (const auto& [format, path] : outputs.files) {
    if (path.empty()) continue;
    const std::string flag = "--" + format;
    LOCKSTEP_RETURN_IF_ERROR(CheckReportOutput(run_dir, ids, flag, path));
    for (const auto& [other_flag, other] : requested) {
      std::error_code ec;
      if (std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec) ==
          std::filesystem::weakly_canonical(std::filesystem::absolute(other), ec)) {
        return InvalidArgumentError(flag + " " + path + ": " + other_flag + " writes there too");
      }
    }
    requested.emplace_back(flag, path);
  }
  return Status::Ok();
}

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
  for (const std::string& format : ReporterNames()) {
    auto file = outputs.files.find(format);
    if (file != outputs.files.end() && !file->second.empty()) keep(Render(format, result, file->second));
  }

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

CommandResult FinishWithReports(const RunResult& result, const ReportOutputs& outputs, std::ostream& out) {
  Status written = WriteReports(result, outputs, out);
  if (!written.ok()) return IoError("writing reports: " + written.ToString());
  if (outputs.write_json) out << "report: " << (outputs.dir / "report.json").string() << "\n";
  return VerdictOf(result);
}

CommandVerdict VerdictOf(const RunResult& result) {
  bool failed = false;
  for (const auto& s : result.scenarios) {
    if (s.outcome == Outcome::kError) return CommandVerdict::kHarnessError;
    failed |= IsFailure(s.outcome);
  }
  return failed ? CommandVerdict::kFailed : CommandVerdict::kPassed;
}

}  // namespace lockstep
