// `lockstep report DIR [--junit F] [--markdown F] [--html F]`: renders a finished run again from
// DIR/report.json, e.g. an HTML report from a nightly artifact that was run without --html.
// report.json is the source and is not rewritten.
#include <memory>
#include <system_error>

#include "harness/cli/command.h"
#include "harness/cli/report_outputs.h"
#include "harness/runner/run_directory.h"
#include "harness/result/run_result_json.h"
#include "reports/console_reporter.h"
#include "reports/reporter_registry.h"

namespace lockstep {
namespace {

struct ReportFlags {
  std::string dir;
  ReportOutputs reports;
};

}  // namespace

Command AddReportCommand(CLI::App& app, const CommandEnvironment& env) {
  auto flags = std::make_shared<ReportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Render the reports of a finished run again from DIR/report.json: print its summary, and write "
      "each format asked for (DIR/report.json itself is left as it is). Under GitHub Actions the "
      "step summary and annotations are written too, as `run` writes them. Exit 0 when everything "
      "asked for was written, whatever the run's outcome; 2 when report.json is missing or invalid.");
  cmd->add_option("dir", flags->dir, "Run directory: the --out folder of `lockstep run`, holding report.json")
      ->required()
      ->type_name("DIR");
  AddReportFlags(*cmd, flags->reports);

  return {cmd, [flags, &env]() -> CommandResult {
            const std::filesystem::path report = std::filesystem::path(flags->dir) / "report.json";
            std::error_code ec;
            if (!std::filesystem::is_regular_file(report, ec)) {
              return InvalidArgumentError(report.string() +
                                          ": no such file (DIR must be the --out folder of a `lockstep run`)");
            }
            Result<RunResult> result = ReadRunResultFile(report.string());
            if (!result.ok()) return InvalidArgumentError(result.status().message());
            // Rendering must not destroy what it renders from: no output on the run's own files.
            std::vector<std::string> ids;
            for (const ScenarioResult& s : result->scenarios) ids.push_back(s.run_dir.empty() ? s.id : s.run_dir);
            // Nor two outputs on one file (--html X --markdown X kept only the last).
            LOCKSTEP_RETURN_IF_ERROR(CheckReportFiles(flags->reports, flags->dir, ids));
            ReportOutputs outputs = flags->reports;
            outputs.dir = flags->dir;
            outputs.write_json = false;
            Status written = WriteReports(*result, outputs, *env.out);
            ConsoleReporter(*env.out, /*interactive=*/false).OnRunEnd(*result);
            if (!written.ok()) return IoError("writing reports: " + written.ToString());
            for (const ReportFlag& flag : ReportFileFlags()) {
              const std::string& path = outputs.files[flag.format];
              if (!path.empty()) *env.out << flag.format << ": " << path << "\n";
            }
            return CommandVerdict::kPassed;
          }};
}

}  // namespace lockstep
