// `lockstep selftest`: runs the fault-injection catalog and K repeats of every clean scenario,
// prints the detection table (caught, at onset, right rank, right tensor, latency) and the
// false-positive count, and exits non-zero unless every injection was caught at its onset on the
// right rank and no clean run failed.
#include <fstream>

#include "harness/cli/command.h"
#include "harness/cli/flag_checks.h"
#include "harness/cli/report_outputs.h"
#include "harness/runner/scenario_runner.h"
#include "harness/selftest/detection_table.h"
#include "reports/console_reporter.h"

namespace lockstep {
namespace {

struct SelftestFlags {
  std::vector<std::string> catalog = {"scenarios/inject"};
  std::vector<std::string> clean = {"scenarios/clean"};
  int repeats = 5;
  std::string out = "out/selftest";
  std::string launcher = "mpirun";
  std::string backend;
  std::string device;
  HostPlacement hosts;
  ReportOutputs reports;
};

}  // namespace

Command AddSelftestCommand(CLI::App& app, const CommandEnvironment& env) {
  auto flags = std::make_shared<SelftestFlags>();
  CLI::App* cmd = app.add_subcommand(
      "selftest", "Prove the harness: every injected desync bug caught at its onset step, no false positive");
  cmd->add_option("catalog", flags->catalog, "Injection scenarios (files or folders)")->capture_default_str();
  cmd->add_option("--clean", flags->clean, "Clean scenarios, each run --repeats times; any finding is a false positive")
      ->capture_default_str();
  cmd->add_option("--repeats", flags->repeats, "How often each clean scenario runs")
      ->capture_default_str()
      ->check(WholeNumberBetween(0, 1000));
  cmd->add_option("--out", flags->out, "Run directory: report.json, detection.md, traces")->capture_default_str();
  cmd->add_option("--launcher", flags->launcher, "How ranks start: mpirun, srun, local or none")
      ->capture_default_str()
      ->check(CLI::IsMember(NameList<LauncherKind>()));
  cmd->add_option("--backend", flags->backend,
                  "Override every scenario's backend: " + CLI::detail::join(NameList<Backend>(), ", "))
      ->check(CLI::IsMember(NameList<Backend>()));
  cmd->add_option("--device", flags->device,
                  "Override every scenario's device: cpu or cuda (the injections must be caught on the GPU as "
                  "on the CPU)")
      ->check(CLI::IsMember(NameList<Device>()));
  AddHostFlags(*cmd, flags->hosts);
  AddReportFlags(*cmd, flags->reports);

  return {cmd, [flags, &env]() -> CommandResult {
            // Both sets are loaded, so that every diagnostic of either is printed at once.
            Result<std::vector<Scenario>> injections = LoadScenariosPrinting(flags->catalog, env);
            Result<std::vector<Scenario>> clean = LoadScenariosPrinting(flags->clean, env);
            LOCKSTEP_RETURN_IF_ERROR(injections.status());
            LOCKSTEP_RETURN_IF_ERROR(clean.status());
            LOCKSTEP_RETURN_IF_ERROR(CheckScenarioLauncher(*FromString<LauncherKind>(flags->launcher)));
            LOCKSTEP_RETURN_IF_ERROR(CheckHostFlags(flags->hosts, *FromString<LauncherKind>(flags->launcher)));
            LOCKSTEP_RETURN_IF_ERROR(CheckAsyncCaptureSetting());
            for (const auto& s : *injections) {
              if (s.inject.empty() || s.expect_fail.empty()) {
                return InvalidArgumentError(s.location.file + ": selftest catalog scenarios need `inject:` and `expect:`");
              }
            }

            RunOptions options;
            options.launcher = *FromString<LauncherKind>(flags->launcher);
            options.hosts = flags->hosts;
            if (!flags->backend.empty()) options.overrides.backend = *FromString<Backend>(flags->backend);
            if (!flags->device.empty()) options.overrides.device = *FromString<Device>(flags->device);
            options.rank_program = env.program_dir / "lockstep-rank";
            options.fixtures_dir = "fixtures";
            for (const auto& arg : env.command_line) {
              options.command_line += (options.command_line.empty() ? "" : " ") + arg;
            }
            ConsoleReporter console = ConsoleReporter::ForStdout();

            options.out_dir = std::filesystem::path(flags->out) / "inject";
            ScenarioRunner inject_runner(options, &console);
            RunResult result = inject_runner.RunAll(*injections);
            std::vector<DetectionRow> rows;
            for (size_t i = 0; i < injections->size(); ++i) {
              rows.push_back(EvaluateDetection((*injections)[i], result.scenarios[i]));
            }

            FalsePositiveCount fp;
            bool interrupted = inject_runner.interrupted();
            for (int k = 1; k <= flags->repeats && !interrupted; ++k) {
              options.out_dir = std::filesystem::path(flags->out) / ("clean-" + std::to_string(k));
              ScenarioRunner clean_runner(options, &console);
              RunResult run = clean_runner.RunAll(*clean);
              interrupted = clean_runner.interrupted();
              for (auto& s : run.scenarios) {
                ++fp.runs;
                if (s.outcome != Outcome::kPass) {
                  ++fp.false_positives;
                  std::string what = s.findings.empty() ? s.reason : s.findings.front().checker + ": " + s.findings.front().message;
                  fp.offenders.push_back(s.id + " (repeat " + std::to_string(k) + "): " + ToString(s.outcome) + ": " + what);
                }
                s.id += "#" + std::to_string(k);
                s.run_dir = "clean-" + std::to_string(k) + "/" + s.run_dir;
                result.scenarios.push_back(std::move(s));
              }
            }
            for (size_t i = 0; i < injections->size(); ++i) {
              result.scenarios[i].run_dir = "inject/" + result.scenarios[i].run_dir;
            }

            const std::string table = RenderDetectionTable(rows, fp, flags->repeats);
            *env.out << "\n" << table;
            ReportOutputs outputs = flags->reports;
            outputs.dir = flags->out;
            Status written = WriteReports(result, outputs, *env.out);
            std::ofstream(std::filesystem::path(flags->out) / "detection.md") << table;
            if (!written.ok()) return IoError("writing reports: " + written.ToString());
            if (interrupted) return CommandVerdict::kHarnessError;
            const bool all_caught = std::all_of(rows.begin(), rows.end(), [](const DetectionRow& r) { return r.ok(); });
            return all_caught && fp.false_positives == 0 ? CommandVerdict::kPassed : CommandVerdict::kFailed;
          }};
}

}  // namespace lockstep
