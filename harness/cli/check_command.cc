// `lockstep check DIR`: the checkers on traces already written, by `lockstep run`, `lockstep
// exec` or a probe in the user's own launch, with the run's result model, reports and exit codes.
// Nothing starts; there is no scenario file and no launch, so the checkers that need one are
// skipped with their reason.
#include <chrono>

#include "harness/cli/command.h"
#include "harness/cli/flag_checks.h"
#include "harness/cli/report_outputs.h"
#include "harness/runner/recorded_run.h"
#include "harness/runner/run_directory.h"
#include "harness/runner/scenario_runner.h"
#include "harness/scenario/scenario_limits.h"
#include "reports/console_reporter.h"

namespace lockstep {
namespace {

struct CheckFlags {
  std::string dir;
  int ranks = 0;
  std::string out;
  bool reuse_out = false;
  ReportOutputs reports;
};

bool SameDirectory(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  return std::filesystem::weakly_canonical(std::filesystem::absolute(a), ec) ==
         std::filesystem::weakly_canonical(std::filesystem::absolute(b), ec);
}

}  // namespace

Command AddCheckCommand(CLI::App& app, const CommandEnvironment& env) {
  auto flags = std::make_shared<CheckFlags>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Run the checkers on traces already written: DIR is a folder of rank-<r>.trace files (a probe's "
      "LOCKSTEP_TRACE_DIR), one scenario folder, or the --out directory of `lockstep run` or `lockstep exec` "
      "(every scenario in it). Same findings, reports and exit codes as `run`; the checkers that need a "
      "scenario file (reference, determinism, golden) or the launch (crash, hang) are skipped "
      "with their reason. Exit 0 no finding, 1 a finding, 2 bad input, 3 a trace is missing or has no step.");
  cmd->add_option("dir", flags->dir, "Folder with the traces")->required()->type_name("DIR");
  cmd->add_option("--ranks", flags->ranks,
                  "How many ranks wrote traces (default: rank 0's header, or the highest rank-<r>.trace); a "
                  "rank without its trace is an error")
      ->check(WholeNumberBetween(1, kMaxRanks));
  cmd->add_option("--out", flags->out,
                  "Write report.json here (a new, empty or lockstep run directory; not DIR itself, whose own "
                  "report.json stays as it is). Without it only the console and the requested reports are written")
      ->type_name("OUT");
  cmd->add_flag("--reuse-out", flags->reuse_out,
                "Write into an --out directory that exists, is not empty and is not a lockstep run directory");
  AddReportFlags(*cmd, flags->reports);

  return {cmd, [flags, &env]() -> CommandResult {
            const std::filesystem::path dir = flags->dir;
            Result<std::vector<RecordedScenario>> found = FindRecordedScenarios(dir);
            if (!found.ok()) return InvalidArgumentError(found.status().message());
            std::vector<std::string> ids;
            for (const RecordedScenario& s : *found) ids.push_back(s.id);
            ReportOutputs outputs = flags->reports;
            outputs.write_json = !flags->out.empty();
            outputs.dir = flags->out;
            Status ready = CheckReportFiles(outputs, dir, ids);
            if (ready.ok() && outputs.write_json) {
              if (SameDirectory(flags->out, dir)) {
                ready = InvalidArgumentError("--out " + flags->out + ": that is DIR, whose report.json is the run's own");
              } else {
                ready = PrepareRunDirectory(flags->out, {}, flags->reuse_out);
              }
            }
            LOCKSTEP_RETURN_IF_ERROR(ready);

            RunOptions options;
            for (const auto& arg : env.command_line) {
              options.command_line += (options.command_line.empty() ? "" : " ") + arg;
            }
            RunResult result;
            result.context = NewRunContext(options);
            result.context.launcher = "none (recorded traces)";
            result.context.backend = "as recorded";
            const auto start = std::chrono::steady_clock::now();
            ConsoleReporter console = ConsoleReporter::ForStdout();
            console.OnRunStart(result.context, static_cast<int>(found->size()));
            for (const RecordedScenario& s : *found) {
              ScenarioResult checked =
                  CheckRecordedScenario(s, flags->ranks > 0 ? std::optional<int>(flags->ranks) : std::nullopt);
              console.OnScenarioStart(checked.id, checked.ranks, checked.steps, 0);
              console.OnScenarioEnd(checked);
              result.scenarios.push_back(std::move(checked));
            }
            result.context.duration_s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            console.OnRunEnd(result);
            return FinishWithReports(result, outputs, *env.out);
          }};
}

}  // namespace lockstep
