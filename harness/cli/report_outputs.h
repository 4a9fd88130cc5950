// Where a finished run's reports go, shared by `lockstep run` and `lockstep report`:
// DIR/report.json always, JUnit / Markdown / HTML on request, the Markdown summary appended to
// $GITHUB_STEP_SUMMARY and annotations on stdout when running under GitHub Actions.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "harness/cli/command.h"
#include "harness/core/status.h"
#include "harness/result/run_result.h"

namespace lockstep {

struct ReportOutputs {
  std::filesystem::path dir;  // report.json goes here
  bool write_json = true;     // false: `lockstep report` renders from report.json and leaves it as it is
  // Report format -> file, for every format the reporter registry gives a flag (ReportFileFlags());
  // an empty file: not requested.
  std::map<std::string, std::string> files;
};

// Adds `--<format> FILE` for every format of ReportFileFlags() (--junit, --markdown, --html).
void AddReportFlags(CLI::App& app, ReportOutputs& outputs);

// Every requested --<format> FILE may not land on the run's own files under `run_dir` (for the
// scenarios `ids`, CheckReportOutput) nor on another requested report.
Status CheckReportFiles(const ReportOutputs& outputs, const std::filesystem::path& run_dir,
                        const std::vector<std::string>& ids);

// Writes every requested report; the first error is returned, the others are still attempted.
Status WriteReports(const RunResult& result, const ReportOutputs& outputs, std::ostream& out);

// WriteReports, then "report: DIR/report.json" on `out`; the run's verdict (VerdictOf), or an
// IoError when a report could not be written.
CommandResult FinishWithReports(const RunResult& result, const ReportOutputs& outputs, std::ostream& out);

// Passed when every scenario passed (or failed as expected), failed when one failed, a harness
// error when one hit a harness error.
CommandVerdict VerdictOf(const RunResult& result);

}  // namespace lockstep
