// `lockstep run FILES|DIRS... --out DIR`: validate every scenario, run each on its ranks, check,
// and write the reports. Nothing runs unless every scenario file is valid.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "checkers/checker_registry.h"
#include "harness/cli/command.h"
#include "harness/cli/flag_checks.h"
#include "harness/cli/report_outputs.h"
#include "harness/core/compare_mode.h"
#include "harness/runner/run_directory.h"
#include "harness/runner/scenario_runner.h"
#include "harness/scenario/scenario_overrides.h"
#include "harness/scenario/scenario_limits.h"
#include "reports/console_reporter.h"

namespace lockstep {
namespace {

struct RunFlags {
  std::vector<std::string> inputs;
  std::string out = "out";
  std::string launcher = "mpirun";
  std::string backend;
  std::string device;
  int ranks = 0;  // 0: each scenario's own
  double hang_timeout_s = 0;
  double quiet_timeout_s = 0;
  double startup_timeout_s = 0;
  bool fail_fast = false;
  std::string compare;  // "" (post-run unless --fail-fast), post-run, in-band
  bool reuse_out = false;
  std::vector<std::string> checks;
  std::vector<std::string> mpirun_args;
  HostPlacement hosts;
  std::string fixtures = "fixtures";
  ReportOutputs reports;
};

// Every check on the flags and the paths the run writes, before the first rank starts.
Status CheckOutputs(const RunFlags& flags, const std::vector<Scenario>& scenarios) {
  std::vector<std::string> ids;
  for (const Scenario& s : scenarios) ids.push_back(s.name);
  LOCKSTEP_RETURN_IF_ERROR(CheckReportFiles(flags.reports, flags.out, ids));
  return PrepareRunDirectory(flags.out, ids, flags.reuse_out);
}

}  // namespace

Command AddRunCommand(CLI::App& app, const CommandEnvironment& env) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run scenarios on local ranks, check every step on every rank, and write the reports");
  cmd->add_option("scenarios", flags->inputs, "Scenario files or folders (searched recursively for *.yaml)")
      ->required();
  cmd->add_option("--out", flags->out, "Run directory: report.json and each scenario's traces and logs")
      ->capture_default_str();
  cmd->add_option("--launcher", flags->launcher,
                  "How ranks start: mpirun (default), srun (Slurm: the ranks on an allocation's nodes, see --nodes), local (torchrun-style "
                  "processes with RANK/WORLD_SIZE/MASTER_ADDR, for gloo and nccl), none (already inside a job)")
      ->capture_default_str()
      ->check(CLI::IsMember(NameList<LauncherKind>()));
  cmd->add_option("--backend", flags->backend,
                  "Override every scenario's backend: " + CLI::detail::join(NameList<Backend>(), ", "))
      ->check(CLI::IsMember(NameList<Backend>()));
  cmd->add_option("--device", flags->device,
                  "Override every scenario's device: cpu, or cuda (each rank on GPU local-rank modulo the GPUs; "
                  "mpi and gloo stage the tensors through host memory; nccl always runs on cuda)")
      ->check(CLI::IsMember(NameList<Device>()));
  cmd->add_option("--ranks", flags->ranks,
                  "Override every scenario's world size (e.g. one rank per GPU for nccl); each scenario must "
                  "allow it (a multiple of its slices, every rank its injections name)")
      ->check(WholeNumberBetween(1, kMaxRanks))
      ->type_name("N");
  cmd->add_option("--hang-timeout", flags->hang_timeout_s,
                  "Seconds without progress on any rank, while the ranks wait on each other (inside a collective, "
                  "or using no CPU), before the run is declared hung (overrides hang_timeout_s)")
      ->check(SecondsBetween(kMinHangTimeoutS, kMaxTimeoutS));
  cmd->add_option("--quiet-timeout", flags->quiet_timeout_s,
                  "Seconds without progress on any rank while some rank still computes outside any collective (an "
                  "evaluation, a checkpoint) before the run is declared hung (overrides quiet_timeout_s)")
      ->check(SecondsBetween(kMinHangTimeoutS, kMaxTimeoutS));
  cmd->add_option("--startup-timeout", flags->startup_timeout_s,
                  "Seconds every rank may take to start (communicator, model, initial broadcast: up to its "
                  "step-0 record) before the run is a start-up timeout (overrides startup_timeout_s)")
      ->check(SecondsBetween(kMinHangTimeoutS, kMaxTimeoutS));
  cmd->add_flag("--fail-fast", flags->fail_fast,
                "Live mode: ranks compare their step digests after every step and stop at the first mismatch "
                "(the same as --compare in-band)");
  cmd->add_option("--compare", flags->compare,
                  "When replicas are compared: post-run (default: the checkers read the traces after the run) or "
                  "in-band (also every step, 16 bytes a rank; at the first mismatch every rank stops and rank 0 "
                  "names the finding at once; post-run still judges)")
      ->check(CLI::IsMember(NameList<CompareMode>()))
      ->type_name("MODE");
  cmd->add_option("--check", flags->checks,
                  "Add a checker to every scenario (repeatable), e.g. determinism or golden");
  cmd->add_option("--mpirun-args", flags->mpirun_args, "Extra arguments for mpirun or srun (repeatable)");
  AddHostFlags(*cmd, flags->hosts);
  cmd->add_option("--fixtures", flags->fixtures, "Fixtures folder (golden files)")->capture_default_str();
  cmd->add_flag("--reuse-out", flags->reuse_out,
                "Run into an --out directory that exists, is not empty and is not a lockstep run directory "
                "(lockstep still replaces only the scenario folders it made)");
  AddReportFlags(*cmd, flags->reports);

  return {cmd, [flags, &env]() -> CommandResult {
            LOCKSTEP_ASSIGN_OR_RETURN(const std::vector<Scenario> scenarios, LoadScenariosPrinting(flags->inputs, env));
            for (const auto& c : flags->checks) {
              if (MakeChecker(c) == nullptr) return InvalidArgumentError("--check " + c + ": no such checker");
            }
            // Every scenario takes the world size override before the first rank of any starts.
            for (Scenario s : scenarios) {
              if (flags->ranks == 0) break;
              LOCKSTEP_RETURN_IF_ERROR(OverrideRanks(flags->ranks, s).WithContext("--ranks " + std::to_string(flags->ranks)));
            }
            LOCKSTEP_RETURN_IF_ERROR(CheckMpirunArgs(flags->mpirun_args, *FromString<LauncherKind>(flags->launcher)));
            LOCKSTEP_RETURN_IF_ERROR(CheckScenarioLauncher(*FromString<LauncherKind>(flags->launcher)));
            LOCKSTEP_RETURN_IF_ERROR(CheckHostFlags(flags->hosts, *FromString<LauncherKind>(flags->launcher)));
            LOCKSTEP_RETURN_IF_ERROR(CheckAsyncCaptureSetting());
            std::string compare_error;
            const std::optional<CompareMode> compare = ResolveCompareMode(flags->fail_fast, flags->compare, &compare_error);
            if (!compare) return InvalidArgumentError(compare_error);
            // Last: it makes the run directory, which no refused flag may leave behind.
            LOCKSTEP_RETURN_IF_ERROR(CheckOutputs(*flags, scenarios));
            RunOptions options;
            options.out_dir = flags->out;
            options.launcher = *FromString<LauncherKind>(flags->launcher);
            if (!flags->backend.empty()) options.overrides.backend = *FromString<Backend>(flags->backend);
            if (!flags->device.empty()) options.overrides.device = *FromString<Device>(flags->device);
            if (flags->ranks > 0) options.overrides.ranks = flags->ranks;
            if (flags->hang_timeout_s > 0) options.overrides.hang_timeout_s = flags->hang_timeout_s;
            if (flags->quiet_timeout_s > 0) options.overrides.quiet_timeout_s = flags->quiet_timeout_s;
            if (flags->startup_timeout_s > 0) options.overrides.startup_timeout_s = flags->startup_timeout_s;
            options.fail_fast = *compare == CompareMode::kInBand;
            options.overrides.extra_checks = flags->checks;
            options.mpirun_args = flags->mpirun_args;
            options.hosts = flags->hosts;
            options.rank_program = env.program_dir / "lockstep-rank";
            options.fixtures_dir = flags->fixtures;
            for (const auto& arg : env.command_line) {
              options.command_line += (options.command_line.empty() ? "" : " ") + arg;
            }

            ConsoleReporter console = ConsoleReporter::ForStdout();
            ScenarioRunner runner(options, &console);
            RunResult result = runner.RunAll(scenarios);
            ReportOutputs outputs = flags->reports;
            outputs.dir = flags->out;
            LOCKSTEP_ASSIGN_OR_RETURN(const CommandVerdict verdict, FinishWithReports(result, outputs, *env.out));
            return runner.interrupted() ? CommandVerdict::kHarnessError : verdict;
          }};
}

}  // namespace lockstep
