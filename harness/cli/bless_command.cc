// `lockstep bless RUN_DIR`: stores the loss curves and final digests of a passing run as golden
// files (fixtures/golden/<scenario id>/<platform>.json), which `--check golden` compares later
// runs against. Failing scenarios are not blessed unless --force.
#include "checkers/golden_file.h"
#include "harness/cli/command.h"
#include "harness/result/run_result_json.h"
#include "harness/runner/scenario_runner.h"
#include "harness/trace/trace_reader.h"

namespace lockstep {
namespace {

struct BlessFlags {
  std::string run_dir;
  std::vector<std::string> scenarios;
  std::string fixtures = "fixtures";
  bool force = false;
};

}  // namespace

Command AddBlessCommand(CLI::App& app, const CommandEnvironment& env) {
  auto flags = std::make_shared<BlessFlags>();
  CLI::App* cmd = app.add_subcommand("bless", "Write or update golden files from a run directory (for --check golden)");
  cmd->add_option("run_dir", flags->run_dir, "A run directory written by `lockstep run` (holds report.json)")->required();
  cmd->add_option("--scenario", flags->scenarios, "Only these scenario ids (repeatable); default: every scenario");
  cmd->add_option("--fixtures", flags->fixtures, "Fixtures folder; golden files go under its golden/")
      ->capture_default_str();
  cmd->add_flag("--force", flags->force, "Also bless scenarios whose outcome was not pass");

  return {cmd, [flags, &env]() -> CommandResult {
            const std::filesystem::path dir = flags->run_dir;
            Result<RunResult> run = ReadRunResultFile((dir / "report.json").string());
            if (!run.ok()) return InvalidArgumentError(run.status().message());
            std::vector<std::string> wanted = flags->scenarios;
            int blessed = 0;
            for (const ScenarioResult& s : run->scenarios) {
              if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), s.id) == wanted.end()) continue;
              wanted.erase(std::remove(wanted.begin(), wanted.end(), s.id), wanted.end());
              if (s.outcome != Outcome::kPass && !flags->force) {
                *env.err << "lockstep bless: " << s.id << ": outcome " << ToString(s.outcome)
                         << ", not blessed (use --force to bless it anyway)\n";
                continue;
              }
              Result<std::vector<RankTrace>> traces = ReadTraceDir(dir / s.run_dir / "traces", s.ranks);
              if (!traces.ok()) return InvalidArgumentError(s.id + ": " + traces.status().message());
              const std::string platform = PlatformFingerprint(s.backend);
              // Refused (exit 2) when a trace is cut or missing: the golden mean loss would average
              // fewer ranks than the run had.
              Status written = WriteGolden(flags->fixtures, s.id, platform, *traces);
              LOCKSTEP_RETURN_IF_ERROR(written.WithContext(s.id));
              *env.out << "blessed " << GoldenPath(flags->fixtures, s.id, platform).string() << "\n";
              ++blessed;
            }
            if (!wanted.empty()) {
              return InvalidArgumentError("no scenario '" + wanted.front() + "' in " + (dir / "report.json").string());
            }
            return blessed > 0 || flags->force ? CommandVerdict::kPassed : CommandVerdict::kFailed;
          }};
}

}  // namespace lockstep
