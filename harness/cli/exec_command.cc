// `lockstep exec --ranks N --out DIR -- COMMAND [ARGS...]`: the user's own training program on N
// ranks, unchanged, with torchrun's environment and the probe (docs/PROBE.md); the same watchdog
// as `lockstep run` (crash, hang, SIGINT, the ranks' lifeline), then the checks and reports of
// `lockstep check`. The program is one scenario of the report.
#include <algorithm>
#include <cstdlib>
#include <map>

#include "checkers/checker_registry.h"
#include "harness/cli/command.h"
#include "harness/cli/flag_checks.h"
#include "harness/cli/report_outputs.h"
#include "harness/discovery/discovery_calls.h"
#include "harness/launcher/launch_command.h"
#include "harness/runner/exec_program.h"
#include "harness/runner/native_recorders.h"
#include "harness/runner/run_directory.h"
#include "harness/runner/scenario_runner.h"
#include "harness/scenario/scenario_limits.h"
#include "reports/console_reporter.h"

namespace lockstep {
namespace {

struct ExecFlags {
  int ranks = 0;
  std::string out;
  std::string launcher = "local";
  double hang_timeout_s = 0;
  double quiet_timeout_s = 0;
  double startup_timeout_s = 0;
  std::string name;
  bool reuse_out = false;
  std::vector<std::string> mpirun_args;
  HostPlacement hosts;
  std::vector<std::string> expect_discovery;  // NAME or NAME=TIMES
  std::vector<std::string> skip_checks;       // checkers not to run
  std::string recorders = "auto";
  std::vector<std::string> command;
  ReportOutputs reports;
};

// An id is a folder name in the run directory and a name in every report.
Status CheckId(const std::string& id, const std::string& where) {
  const bool ok = !id.empty() && id.size() <= kMaxIdLength && id != "." && id != ".." &&
                  id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                      std::string::npos;
  for (std::string_view reserved : kReservedIds) {
    if (id == reserved) return InvalidArgumentError(where + " '" + id + "' is reserved");
  }
  if (!ok) {
    return InvalidArgumentError(where + " '" + id + "': use 1 to " + std::to_string(kMaxIdLength) +
                                " letters, digits, '.', '_' or '-'");
  }
  return Status::Ok();
}

// `--expect-discovery NAME[=TIMES]`: a discovery call the program may make at any time, at most
// TIMES (default 1) per process (the scenario's `expect.discovery`).
Status ParseExpectedDiscovery(const std::vector<std::string>& specs, std::map<std::string, int>& allowed) {
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    const std::string name = spec.substr(0, eq);
    if (FindDiscoveryCall(name) == nullptr) {
      return InvalidArgumentError("--expect-discovery " + spec + ": " + UnknownDiscoveryCallMessage(name));
    }
    int times = 1;
    if (eq != std::string::npos) {
      const std::string text = spec.substr(eq + 1);
      char* end = nullptr;
      const long n = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || n < 1 || n > kMaxCount) {
        return InvalidArgumentError("--expect-discovery " + spec + ": TIMES must be a whole number from 1 to " +
                                    std::to_string(kMaxCount));
      }
      times = static_cast<int>(n);
    }
    allowed[name] = times;
  }
  return Status::Ok();
}

// Every checker but those --skip-check names, in the registry's order. A name that is no checker,
// or the checker that judges how a launch ended (crash, hang, startup timeout), which the runner
// runs whatever a scenario's checks list, is bad input: skipping it would not do what it says.
Status ChecksWithout(const std::vector<std::string>& skipped, std::vector<std::string>& checks) {
  checks = CheckerNames();
  for (const std::string& name : skipped) {
    if (MakeChecker(name) == nullptr) {
      std::string known;
      for (const std::string& c : CheckerNames()) known += (known.empty() ? "" : ", ") + c;
      return InvalidArgumentError("--skip-check " + name + ": no such checker (the checkers: " + known + ")");
    }
    for (const std::string& ending : NameList<LaunchEnding>()) {
      if (CheckerJudging(*FromString<LaunchEnding>(ending)) == name) {
        return InvalidArgumentError("--skip-check " + name + ": it judges a launch that ends in " + ending +
                                    ", which is judged whatever checkers run; it cannot be skipped");
      }
    }
    checks.erase(std::remove(checks.begin(), checks.end(), name), checks.end());
  }
  return Status::Ok();
}

}  // namespace

Command AddExecCommand(CLI::App& app, const CommandEnvironment& env) {
  auto flags = std::make_shared<ExecFlags>();
  CLI::App* cmd = app.add_subcommand(
      "exec",
      "Run your own training program on N ranks and check it like a scenario: COMMAND starts once per rank, "
      "unchanged, with torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT; "
      "the lockstep probe (first on PYTHONPATH) records every rank's parameters, gradients, buffers, optimizer "
      "state and collectives after every optimizer step into DIR/<id>/traces/. The ranks are watched as in "
      "`lockstep run` (crash, hang, Ctrl-C), then checked and reported as `lockstep check` does. Exit 0 no "
      "finding, 1 a finding, 2 bad input (COMMAND not found, bad flags), 3 nothing could be checked (the "
      "program exited before initializing torch.distributed, never stepped an optimizer, or the probe did "
      "not load). Example: lockstep exec --ranks 2 --out out -- python3 train.py --epochs 1");
  cmd->add_option("--ranks", flags->ranks, "Number of ranks")
      ->required()
      ->check(WholeNumberBetween(1, kMaxRanks));
  cmd->add_option("--out", flags->out, "Run directory: report.json, and DIR/<id>/traces and logs")
      ->required()
      ->type_name("DIR");
  cmd->add_option("--launcher", flags->launcher,
                  "How ranks start: local (default: N processes on this machine, as torchrun does), mpirun, srun "
                  "(the ranks on a Slurm allocation's nodes, torchrun's variables filled in from srun's; see "
                  "--nodes), none (already inside a job), torchrun "
                  "(torchrun --nproc-per-node N --max-restarts 0), accelerate (accelerate launch, configured on "
                  "its command line); torchrun and accelerate are looked up on PATH")
      ->capture_default_str()
      ->check(CLI::IsMember(NameList<LauncherKind>()));
  cmd->add_option("--hang-timeout", flags->hang_timeout_s,
                  "Seconds without a new record on any rank (step, collective) while the ranks wait on each "
                  "other (inside a collective a peer has not reached or that never completes, or using no CPU) "
                  "before the run is a hang (default 30)")
      ->check(SecondsBetween(kMinHangTimeoutS, kMaxTimeoutS));
  cmd->add_option("--quiet-timeout", flags->quiet_timeout_s,
                  "Seconds without a new record on any rank while some rank still computes outside any "
                  "collective (an evaluation, a checkpoint, data loading) before the run is a hang (default 1800)")
      ->check(SecondsBetween(kMinHangTimeoutS, kMaxTimeoutS));
  cmd->add_option("--startup-timeout", flags->startup_timeout_s,
                  "Seconds every rank may take to its first optimizer step (imports, data, model) (default 300)")
      ->check(SecondsBetween(kMinHangTimeoutS, kMaxTimeoutS));
  cmd->add_option("--name", flags->name,
                  "Scenario id in the report and folder name under --out (default: the stem of the program's "
                  "own script, the last .py a wrapper hands on: 'train' for train.py)")
      ->type_name("ID");
  cmd->add_flag("--reuse-out", flags->reuse_out,
                "Run into an --out directory that exists, is not empty and is not a lockstep run directory "
                "(lockstep still replaces only the folders it made)");
  // Repeatable options take one value each time and never the `--` that starts COMMAND (CLI11
  // otherwise lets a list option eat the `--`, and COMMAND's own flags become lockstep's); each use
  // adds its value (expected(1) would cap the whole list at one value and refuse a second use).
  cmd->add_option("--mpirun-args", flags->mpirun_args,
                  "Extra argument for mpirun or srun, one per use (repeatable: --mpirun-args=--mca "
                  "--mpirun-args=btl --mpirun-args=self,tcp)")
      ->allow_extra_args(false);
  AddHostFlags(*cmd, flags->hosts);
  cmd->add_option("--expect-discovery", flags->expect_discovery,
                  "A discovery call the program may make at any time, at most TIMES per process (default 1); "
                  "without it every discovery call must come before the first optimizer step (repeatable; "
                  "e.g. torch.new_group=2; docs/CHECKERS.md#discovery_count lists the calls)")
      ->type_name("NAME[=TIMES]")
      ->allow_extra_args(false);
  cmd->add_option("--skip-check", flags->skip_checks,
                  "A checker not to run on this program, one per use (repeatable): for a finding the program "
                  "means, such as forward_passes for ranks that run different numbers of micro-batches on "
                  "purpose; docs/CHECKERS.md lists them. The judges of crashes, hangs and startup timeouts "
                  "cannot be skipped")
      ->type_name("CHECKER")
      ->allow_extra_args(false);
  cmd->add_option("--recorders", flags->recorders,
                  "Native discovery recorders loaded into every rank: auto (default: nccl and cuda where built, "
                  "and mpi when --launcher mpirun starts the ranks and is Open MPI's), none, or a comma-separated list of mpi "
                  "(MPI_Init, MPI_Comm_split & co., by LD_PRELOAD), nccl (NCCL's communicators and collectives, "
                  "its profiler plugin), cuda (cuInit and device counts, CUPTI); docs/CHECKERS.md#discovery_count")
      ->type_name("auto|none|LIST");
  AddReportFlags(*cmd, flags->reports);
  cmd->add_option("command", flags->command, "The program and its arguments, after --")
      ->required()
      ->type_name("-- COMMAND [ARGS...]");

  return {cmd, [flags, &env]() -> CommandResult {
            std::ostream& err = *env.err;
            const char* path_var = std::getenv("PATH");
            std::optional<std::filesystem::path> program =
                FindExecutable(flags->command.front(), path_var ? path_var : "");
            if (!program) {
              return InvalidArgumentError("COMMAND '" + flags->command.front() +
                                          "' not found: no executable file of that name" +
                                          (flags->command.front().find('/') == std::string::npos ? " on PATH" : ""));
            }
            const std::string id = flags->name.empty() ? ExecScenarioId(flags->command) : flags->name;
            Status ready = CheckId(id, flags->name.empty() ? "scenario id (from COMMAND; --name sets it)" : "--name");
            ReportOutputs outputs = flags->reports;
            outputs.dir = flags->out;
            std::map<std::string, int> discovery_allowed;
            if (ready.ok()) ready = ParseExpectedDiscovery(flags->expect_discovery, discovery_allowed);
            std::vector<std::string> checks;
            if (ready.ok()) ready = ChecksWithout(flags->skip_checks, checks);
            if (ready.ok()) ready = CheckMpirunArgs(flags->mpirun_args, *FromString<LauncherKind>(flags->launcher));
            if (ready.ok()) ready = CheckHostFlags(flags->hosts, *FromString<LauncherKind>(flags->launcher));
            if (ready.ok()) ready = CheckAsyncCaptureSetting();
            // The PMPI wrappers go into MPI programs only: by default, ranks that mpirun starts, when
            // that mpirun is Open MPI's (the MPI they are built against).
            const std::filesystem::path recorder_dir = RecorderDir(env.program_dir);
            const NativeRecorders built = BuiltRecorders(recorder_dir);
            bool preload_mpi = false;
            std::vector<std::string> notes;
            if (flags->recorders == "auto" && built.mpi && *FromString<LauncherKind>(flags->launcher) == LauncherKind::kMpirun) {
              Result<std::filesystem::path> mpirun = FindMpirun();
              preload_mpi = mpirun.ok() && IsOpenMpiLauncher(mpirun.value());
              if (mpirun.ok() && !preload_mpi) {
                notes.push_back(mpirun.value().string() +
                                " is not Open MPI's: the program's MPI calls are not recorded (--recorders mpi,... "
                                "preloads the Open MPI wrappers anyway)");
              }
            }
            Result<NativeRecorders> recorders = ChooseRecorders(flags->recorders, built, preload_mpi);
            if (ready.ok()) ready = recorders.status();
            if (ready.ok()) ready = CheckReportFiles(outputs, flags->out, {id});
            if (ready.ok()) ready = PrepareRunDirectory(flags->out, {id}, flags->reuse_out);
            LOCKSTEP_RETURN_IF_ERROR(ready);

            ExecProgramOptions exec;
            exec.command = flags->command;
            exec.command.front() = program->string();
            exec.launcher = *FromString<LauncherKind>(flags->launcher);
            exec.probe_dir = FindProbeDir(env.program_dir);
            if (const char* python_path = std::getenv("PYTHONPATH")) exec.python_path = python_path;
            if (exec.probe_dir.empty()) {
              err << "lockstep exec: note: no probe at " << (env.program_dir.parent_path() / "python").string()
                  << " (not built here; set " << kProbePathEnv
                  << " to use another): a Python program will write no trace\n";
            }
            AddRecorderEnv(recorders.value(), recorder_dir, exec.recorder_env, &notes);
            // torchrun's own notice, as torchrun gives it: the ranks would otherwise run several
            // times slower here than under torchrun (one OpenMP thread per core in every rank).
            if (LocalSetsOmpNumThreads(exec.launcher, flags->ranks, exec.recorder_env)) {
              notes.push_back(std::string(kOmpNumThreadsNotice) + " (OMP_NUM_THREADS=1, as torchrun sets it)");
            }
            for (const std::string& skipped : flags->skip_checks) {
              notes.push_back("not checked: " + skipped + " (--skip-check)");
            }
            for (const std::string& note : notes) err << "lockstep exec: note: " << note << "\n";
            ExecProgram rank_program(exec);

            Scenario scenario;
            scenario.name = id;
            scenario.description = "lockstep exec: " + [&] {
              std::string line;
              for (const auto& a : flags->command) line += (line.empty() ? "" : " ") + ShellQuote(a);
              return line;
            }();
            scenario.ranks = flags->ranks;
            scenario.steps = 0;  // unknown: the program decides
            scenario.timeout_s = 0;  // a real training run takes as long as it takes; hangs are caught
            scenario.checks = checks;
            scenario.discovery_allowed = discovery_allowed;
            RunOptions options;
            options.out_dir = flags->out;
            options.launcher = exec.launcher;
            if (flags->hang_timeout_s > 0) options.overrides.hang_timeout_s = flags->hang_timeout_s;
            if (flags->quiet_timeout_s > 0) options.overrides.quiet_timeout_s = flags->quiet_timeout_s;
            if (flags->startup_timeout_s > 0) options.overrides.startup_timeout_s = flags->startup_timeout_s;
            options.mpirun_args = flags->mpirun_args;
            options.hosts = flags->hosts;
            for (const auto& arg : env.command_line) {
              options.command_line += (options.command_line.empty() ? "" : " ") + arg;
            }

            ConsoleReporter console = ConsoleReporter::ForStdout();
            ScenarioRunner runner(options, &console, rank_program, ProcessLauncher());
            RunResult result = runner.RunAll({scenario});
            result.context.backend = "the program's own";
            LOCKSTEP_ASSIGN_OR_RETURN(const CommandVerdict verdict, FinishWithReports(result, outputs, *env.out));
            return runner.interrupted() ? CommandVerdict::kHarnessError : verdict;
          }};
}

}  // namespace lockstep
