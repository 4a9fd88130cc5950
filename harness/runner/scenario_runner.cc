#include "harness/runner/scenario_runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "checkers/checker_registry.h"
#include "checkers/checker_run.h"
#include "checkers/in_band_comparison.h"
#include "harness/core/build_info.h"
#include "harness/core/untrusted_input.h"
#include "harness/launcher/launch_command.h"
#include "harness/result/scenario_series.h"
#include "harness/runner/lockstep_rank_program.h"
#include "harness/runner/recorded_run.h"
#include "harness/runner/run_directory.h"
#include "harness/scenario/ranks_override.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string Iso8601Now() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

std::string HostName() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown-cpu";
}

std::string Slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string ModeName(const Scenario& s) {
  std::string mode = ToString(s.parallel.mode);
  if (s.slices > 1) mode += "/slices=" + std::to_string(s.slices);
  return mode;
}

// The last `max_lines` lines of a rank's captured output.
std::string LogTail(const std::filesystem::path& file, size_t max_lines) {
  std::ifstream in(file);
  if (!in) return "";
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > max_lines) lines.erase(lines.begin());
  }
  std::string out;
  // A program's line can be megabytes (a tensor printed whole): quoted cut, with the count.
  for (const auto& l : lines) out += CutLongText(l) + "\n";
  return out;
}

// NCCL needs a GPU; without one every rank would fail in ncclCommInitRank.
bool GpuVisible() {
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    const std::string v = visible;
    if (v.empty() || v == "-1" || v == "NoDevFiles") return false;
  }
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidia0", ec) || std::filesystem::exists("/dev/dxg", ec);
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The scenario's checks, plus the checker that judges how the launch ended when it ended badly
// (crash, hang): a run whose ranks died or hung never passes because `checks` left it out.
std::vector<std::string> ChecksFor(std::vector<std::string> checks, const LaunchReport& launch) {
  std::optional<std::string> judge = CheckerJudging(launch.ending);
  if (judge && !Contains(checks, *judge)) checks.push_back(std::move(*judge));
  return checks;
}

// Why a launch of a program that is not lockstep's left nothing to check, or empty: a rank
// without a trace never initialized torch.distributed (or the probe did not load), ranks without
// a step record never stepped an optimizer.
std::string NothingToCheck(const std::vector<RankTrace>& traces, const LaunchReport& launch,
                           const std::filesystem::path& dir) {
  auto exit_of = [&launch](int rank) {
    for (const RankExit& e : launch.ranks) {
      if (e.rank != rank) continue;
      if (e.signal) return " (killed by signal " + std::to_string(*e.signal) + ")";
      if (e.exit_code) return " (exited with code " + std::to_string(*e.exit_code) + ")";
    }
    return std::string();
  };
  std::vector<std::string> no_trace, no_step;
  for (size_t r = 0; r < traces.size(); ++r) {
    const int rank = static_cast<int>(r);
    if (traces[r].missing) no_trace.push_back("rank " + std::to_string(rank) + exit_of(rank));
    else if (traces[r].steps.empty()) no_step.push_back("rank " + std::to_string(rank) + exit_of(rank));
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
  };
  std::string logs = "; see " + (dir / "logs").string() + "/rank-<r>.log";
  // The last line the first silent rank printed usually says why (a traceback's last line).
  for (size_t r = 0; r < traces.size() && (!no_trace.empty() || !no_step.empty()); ++r) {
    if (!traces[r].missing && !traces[r].steps.empty()) continue;
    std::string tail = LogTail(RankLogPath(dir / "logs", static_cast<int>(r)), 1);
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
    if (!tail.empty()) logs += "; rank " + std::to_string(r) + " printed last: " + tail;
    break;
  }
  if (!no_trace.empty()) {
    return "no trace from " + join(no_trace) +
           ": the program never initialized torch.distributed, or the probe did not load (its messages start "
           "with 'lockstep probe:')" + logs;
  }
  if (!no_step.empty()) {
    return "no step recorded by " + join(no_step) +
           ": the program initialized torch.distributed but never stepped an optimizer, so nothing was checked" +
           logs;
  }
  return "";
}

// --compare in-band: rank 0's trace holds the findings the ranks made live. The post-run
// analysis stays the judge of record and the report shows its findings only; an in-band finding
// that differs from it is a harness bug, reported as an error naming both (docs/CHECKERS.md).
void HoldInBandAgainstPostRun(const std::vector<RankTrace>& traces, ScenarioResult* result) {
  if (traces.empty()) return;
  const std::vector<Finding> in_band = InBandFindings(traces.front());
  if (in_band.empty()) return;
  std::vector<std::string> ran;
  for (const CheckerVerdict& v : result->checkers) {
    if (v.outcome != Outcome::kSkipped && v.outcome != Outcome::kError) ran.push_back(v.checker);
  }
  const std::string disagreement = InBandDisagreement(in_band, result->findings, ran);
  if (disagreement.empty()) return;
  result->outcome = Outcome::kError;
  result->reason = disagreement;
}

}  // namespace

std::string PlatformFingerprint(const std::string& backend) {
  const BuildInfo& b = GetBuildInfo();
  const std::string device = backend == ToString(Backend::kNccl) ? "gpu" : "cpu-" + Slug(CpuModel());
  return "libtorch-" + b.torch_version + "_" + backend + "_" + device;
}

std::string PlatformFingerprint(const Scenario& scenario) {
  const std::string backend = ToString(scenario.backend);
  if (EffectiveDevice(scenario) == Device::kCpu) return PlatformFingerprint(backend);
  return "libtorch-" + GetBuildInfo().torch_version + "_" + backend + "_gpu";  // gloo or mpi on CUDA tensors
}

ScenarioRunner::ScenarioRunner(RunOptions options, RunListener* listener)
    : options_(std::move(options)), listener_(listener), launcher_(&ProcessLauncher()) {
  LockstepRankOptions rank;
  rank.program = options_.rank_program;
  rank.backend = options_.backend;
  rank.device = options_.device;
  rank.ranks = options_.ranks;
  rank.fail_fast = options_.fail_fast;
  owned_program_ = std::make_unique<LockstepRankProgram>(std::move(rank));
  program_ = owned_program_.get();
}

ScenarioRunner::ScenarioRunner(RunOptions options, RunListener* listener, const RankProgram& program,
                               RankLauncher& launcher)
    : options_(std::move(options)), listener_(listener), program_(&program), launcher_(&launcher) {}

Result<LaunchReport> ScenarioRunner::LaunchRanks(const Scenario& scenario, const std::filesystem::path& dir,
                                                 RankRun run) {
  const bool one_rank = run == RankRun::kReference || run == RankRun::kReferenceSplit;
  LaunchSpec spec;
  spec.kind = options_.launcher;
  spec.ranks = one_rank ? 1 : scenario.ranks;
  spec.trace_dir = dir / "traces";
  spec.log_dir = dir / "logs";
  spec.hang_timeout_s = scenario.hang_timeout_s;
  spec.startup_timeout_s = scenario.startup_timeout_s;
  spec.timeout_s = scenario.timeout_s;
  spec.mpirun_args = options_.mpirun_args;
  RankInvocation invocation = program_->Invocation(scenario, run, spec.trace_dir);
  spec.rank_command = std::move(invocation.argv);
  spec.env = std::move(invocation.env);
  // A previous run of the same scenario in this out dir; never a folder lockstep did not make.
  LOCKSTEP_RETURN_IF_ERROR(ResetScenarioDirectory(dir));
  std::error_code ec;
  std::filesystem::create_directories(spec.trace_dir, ec);
  std::filesystem::create_directories(spec.log_dir, ec);

  ProgressCallback progress;
  if (run == RankRun::kMain && listener_) {
    progress = [this, &scenario](int rank, int64_t step) {
      if (rank == 0) listener_->OnProgress(scenario.name, step, scenario.steps);
    };
  }
  return launcher_->Launch(spec, progress);
}

Result<ScenarioRunner::LaunchOutput> ScenarioRunner::LaunchCompanion(const Scenario& scenario,
                                                                     const std::filesystem::path& dir, RankRun run) {
  LOCKSTEP_ASSIGN_OR_RETURN(LaunchReport report, LaunchRanks(scenario, dir, run));
  const bool one_rank = run == RankRun::kReference || run == RankRun::kReferenceSplit;
  LOCKSTEP_ASSIGN_OR_RETURN(StreamedTraces whole,
                            ReadTracesWhole(dir / "traces", one_rank ? 1 : scenario.ranks, "a companion run"));
  return LaunchOutput{std::move(report), std::move(whole)};
}

Result<StreamedTraces> ScenarioRunner::ReadRunTraces(const Scenario& scenario, const LaunchReport& launch,
                                                     const std::filesystem::path& dir, const JudgeStart& start) {
  // The checkers that will judge this launch (those a run without a scenario file skips are left out).
  std::vector<std::string> judged;
  for (const std::unique_ptr<Checker>& checker : MakeCheckers(ChecksFor(scenario.checks, launch))) {
    if (options_.no_scenario_file && !WhyNotWithoutScenario(*checker, /*have_launch=*/true).empty()) continue;
    judged.emplace_back(checker->name());
  }
  return ReadTracesFor(judged, dir / "traces", scenario.ranks, start);
}

ScenarioResult ScenarioRunner::RunOne(const Scenario& input) {
  const auto start = std::chrono::steady_clock::now();
  Scenario scenario = input;
  if (options_.backend) scenario.backend = *options_.backend;
  if (options_.device) scenario.device = *options_.device;
  // The CLI checked the override against every scenario before anything ran.
  const Status ranks_override = options_.ranks ? OverrideRanks(*options_.ranks, scenario) : Status::Ok();
  if (options_.hang_timeout_s) scenario.hang_timeout_s = *options_.hang_timeout_s;
  if (options_.startup_timeout_s) scenario.startup_timeout_s = *options_.startup_timeout_s;
  for (const auto& c : options_.extra_checks) {
    if (!Contains(scenario.checks, c)) scenario.checks.push_back(c);
  }

  ScenarioResult result;
  result.id = scenario.name;
  result.file = scenario.location.file;
  result.line = std::max(1, scenario.location.line);
  result.description = scenario.description;
  result.mode = ModeName(scenario);
  result.backend = ToString(scenario.backend);
  result.ranks = scenario.ranks;
  result.steps = scenario.steps;
  result.run_dir = scenario.name;
  if (listener_) listener_->OnScenarioStart(scenario.name, scenario.ranks, scenario.steps);

  auto finish = [&](ScenarioResult r) {
    r.duration_s = Since(start);
    if (listener_) listener_->OnScenarioEnd(r);
    return r;
  };

  if (options_.no_scenario_file) {
    // The program picks its backend; the traces say which.
    result.mode = "program";
    result.backend.clear();
  }

  if (!options_.no_scenario_file && scenario.backend == Backend::kNccl && !GetBuildInfo().have_nccl) {
    result.outcome = Outcome::kSkipped;
    result.reason = "backend nccl: this build has no NCCL (configure with CUDA and NCCL present)";
    return finish(result);
  }

  if (!options_.no_scenario_file && scenario.backend == Backend::kNccl && !GpuVisible()) {
    result.outcome = Outcome::kSkipped;
    result.reason = "backend nccl: no GPU is visible on this machine (no /dev/nvidia0, or CUDA_VISIBLE_DEVICES hides them all)";
    return finish(result);
  }
  // Asked for, not merely allowed: a cuda run that cannot have a GPU is the harness's problem,
  // never a run on the CPU instead.
  if (scenario.device == Device::kCuda && !GpuVisible()) {
    result.outcome = Outcome::kError;
    result.reason = "device cuda: no GPU is visible on this machine (no /dev/nvidia0, or CUDA_VISIBLE_DEVICES hides "
                    "them all)";
    return finish(result);
  }
  if (!ranks_override.ok()) {
    result.outcome = Outcome::kError;
    result.reason = "--ranks: " + ranks_override.message();
    return finish(result);
  }
  // Refused before any rank starts: plain processes have no MPI world to join.
  if (!options_.no_scenario_file && scenario.backend == Backend::kMpi && options_.launcher == LauncherKind::kLocal) {
    result.outcome = Outcome::kError;
    result.reason = "backend mpi cannot run under --launcher local: it starts plain processes with RANK/WORLD_SIZE, "
                    "which MPI does not read (use --launcher mpirun or srun, or backend gloo)";
    return finish(result);
  }

  const std::filesystem::path dir = options_.out_dir / scenario.name;
  const Result<LaunchReport> launched = LaunchRanks(scenario, dir, RankRun::kMain);
  if (!launched.ok()) {
    result.outcome = Outcome::kError;
    result.reason = launched.status().ToString();
    return finish(result);
  }
  const LaunchReport& launch = *launched;
  // The run's traces are read after its companions, whose traces the judges compare each step
  // with; a launch that ends before the checkers (or a run without a scenario file, which has no
  // companions) is read now, for what it reports.
  const bool read_now = options_.no_scenario_file || launch.ending == LaunchEnding::kLaunchFailed ||
                        launch.ending == LaunchEnding::kInterrupted || launch.ending == LaunchEnding::kRankError ||
                        launch.ending == LaunchEnding::kStartupTimeout || launch.ending == LaunchEnding::kTimeout;
  Result<StreamedTraces> run = read_now ? ReadRunTraces(scenario, launch, dir, JudgeStart{})
                                        : Result<StreamedTraces>(StreamedTraces{});
  if (!run.ok()) {
    result.outcome = Outcome::kError;
    result.reason = run.status().ToString();
    return finish(result);
  }
  for (int r = 0; r < scenario.ranks; ++r) {
    std::string tail = LogTail(RankLogPath(dir / "logs", r), 40);
    if (!tail.empty()) result.rank_logs[r] = tail;
  }
  switch (launch.ending) {
    case LaunchEnding::kLaunchFailed:
      result.outcome = Outcome::kError;
      result.reason = "the ranks could not be started: " + launch.message;
      return finish(result);
    case LaunchEnding::kInterrupted:
      interrupted_ = true;
      result.outcome = Outcome::kError;
      result.reason = "interrupted (SIGINT/SIGTERM); the ranks were stopped";
      result.series = std::move(run->series);
      return finish(result);
    case LaunchEnding::kRankError:
      // The harness failed on a rank (configuration, environment, internal, trace I/O): no
      // verdict on the system under test, and the rank's own message says why.
      result.outcome = Outcome::kError;
      result.reason = launch.message;
      result.series = std::move(run->series);
      return finish(result);
    case LaunchEnding::kStartupTimeout: {
      // Some ranks never started: the other checkers have nothing to compare.
      CheckContext context{scenario, run->traces, launch};
      context.steps_without_tensors = !run->whole;
      CheckerRun checked = RunCheckers({*CheckerJudging(LaunchEnding::kStartupTimeout)}, context, scenario.expect_fail);
      result.findings = std::move(checked.findings);
      result.checkers = std::move(checked.verdicts);
      result.outcome = checked.expectation.outcome;
      result.reason = launch.message;
      result.series = std::move(run->series);
      return finish(result);
    }
    case LaunchEnding::kTimeout:
      result.outcome = Outcome::kTimeout;
      result.reason = "ran past timeout_s = " + std::to_string(scenario.timeout_s) + " s; " + launch.message;
      result.series = std::move(run->series);
      return finish(result);
    default:
      break;
  }
  if (options_.no_scenario_file) {
    for (const RankTrace& t : run->traces) {
      if (result.backend.empty()) result.backend = t.header.backend;
      for (const StepRecord& s : t.steps) result.steps = std::max(result.steps, s.step);
    }
    // A program that starts ranks of its own (mp.spawn under --ranks 1) writes traces past the
    // ranks it was given: judging only the given ones would pass what `check` of the same folder
    // finds. Every trace in the folder is judged, or the run is an error that says why.
    if (const std::optional<int> highest = HighestTraceRank(dir / "traces"); highest && *highest >= scenario.ranks) {
      result.outcome = Outcome::kError;
      result.reason = "the program started more ranks than --ranks " + std::to_string(scenario.ranks) + ": " +
                      (dir / "traces" / TraceFileName(*highest)).string() + " is rank " + std::to_string(*highest) +
                      "'s trace; run it with --ranks " + std::to_string(*highest + 1) +
                      " (and without its own spawning), or judge the folder with `lockstep check " + dir.string() + "`";
      return finish(result);
    }
    // A program that is not lockstep's: without a trace or a step there is nothing to judge.
    if (std::string nothing = NothingToCheck(run->traces, launch, dir); !nothing.empty()) {
      result.outcome = Outcome::kError;
      result.reason = nothing;
      return finish(result);
    }
  }

  // Companion runs the checks need: the 1-rank reference and a repeat for determinism.
  std::optional<LaunchOutput> reference, reference_split, repeat;
  CheckerRunOptions check_options;
  std::string interrupted_during;  // "reference", "reference-split" or "repeat"
  auto companion = [&](const std::string& checker, RankRun kind, std::optional<LaunchOutput>* out) {
    if (interrupted_ || check_options.skip.count(checker)) return;
    const std::string sub = ToString(kind);
    if (!program_->Supports(kind)) {
      check_options.skip[checker] = "the rank program cannot make the " + sub + " run it needs";
      return;
    }
    Result<LaunchOutput> r = LaunchCompanion(scenario, dir / sub, kind);
    if (r.ok() && r->report.ending == LaunchEnding::kClean) {
      *out = std::move(r).value();
      return;
    }
    if (r.ok() && r->report.ending == LaunchEnding::kInterrupted) {
      // Not a finding of the checker: the whole run stops here, as for the main launch.
      interrupted_ = true;
      interrupted_during = sub;
      return;
    }
    Finding f;
    f.checker = checker;
    f.outcome = FindingOutcome::kError;
    f.message = "the " + sub + " run did not complete: " +
                (r.ok() ? std::string(ToString(r->report.ending)) + " " + r->report.message : r.status().ToString());
    check_options.findings_instead[checker].push_back(f);
  };
  if (options_.no_scenario_file) {
    for (const std::unique_ptr<Checker>& checker : MakeCheckers(scenario.checks)) {
      std::string why = WhyNotWithoutScenario(*checker, /*have_launch=*/true);
      if (!why.empty()) check_options.skip[std::string(checker->name())] = why;
    }
  }
  // The registry says which checker needs which run: the 1-rank reference; the same global batch
  // in the N ranks' pieces, whose distance to the plain reference is the rounding noise that
  // `reference` derives its tolerance from; a repeat of the run.
  for (const auto& [checker, needed] : CompanionRuns(scenario.checks)) {
    switch (needed) {
      case Companion::kReference: companion(checker, RankRun::kReference, &reference); break;
      case Companion::kReferenceSplit: companion(checker, RankRun::kReferenceSplit, &reference_split); break;
      case Companion::kRepeat: companion(checker, RankRun::kRepeat, &repeat); break;
    }
  }
  if (!read_now) {
    JudgeStart start;
    start.tolerances = scenario.tolerances;
    start.reference = reference ? &reference->read.traces : nullptr;
    start.reference_split = reference_split ? &reference_split->read.traces : nullptr;
    start.scenario_name = scenario.name;
    start.fixtures_dir = options_.fixtures_dir;
    start.platform = PlatformFingerprint(scenario);
    run = ReadRunTraces(scenario, launch, dir, start);
    if (!run.ok()) {
      result.outcome = Outcome::kError;
      result.reason = run.status().ToString();
      return finish(result);
    }
  }
  if (!interrupted_during.empty()) {
    result.outcome = Outcome::kError;
    result.reason = "interrupted (SIGINT/SIGTERM) during the " + interrupted_during + " run; the ranks were stopped";
    result.series = std::move(run->series);
    return finish(result);
  }

  CheckContext context{scenario, run->traces, launch};
  context.steps_without_tensors = !run->whole;
  context.reference = reference ? &reference->read.traces : nullptr;
  context.reference_split = reference_split ? &reference_split->read.traces : nullptr;
  context.repeat = repeat ? &repeat->read.traces : nullptr;
  context.fixtures_dir = options_.fixtures_dir;
  context.platform = PlatformFingerprint(scenario);

  check_options.judges = run->judges_by_name();
  CheckerRun checked = RunCheckers(ChecksFor(scenario.checks, launch), context, scenario.expect_fail, check_options);
  result.findings = std::move(checked.findings);
  result.checkers = std::move(checked.verdicts);
  result.outcome = checked.expectation.outcome;
  result.reason = checked.expectation.reason;
  result.series = std::move(run->series);
  HoldInBandAgainstPostRun(run->traces, &result);
  return finish(result);
}

RunContext NewRunContext(const RunOptions& options) {
  RunContext context;
  context.versions = BuildInfoMap();
  context.host = HostName();
  context.git_sha = GetBuildInfo().git_sha;
  context.backend = options.backend ? ToString(*options.backend) : "per-scenario";
  context.launcher = ToString(options.launcher);
  context.command_line = options.command_line;
  context.started_at = Iso8601Now();
  return context;
}

RunResult ScenarioRunner::RunAll(const std::vector<Scenario>& scenarios) {
  const auto start = std::chrono::steady_clock::now();
  RunResult run;
  run.context = NewRunContext(options_);
  if (listener_) listener_->OnRunStart(run.context, static_cast<int>(scenarios.size()));
  for (const auto& s : scenarios) {
    if (interrupted_) {
      ScenarioResult skipped;
      skipped.id = s.name;
      skipped.file = s.location.file;
      skipped.outcome = Outcome::kSkipped;
      skipped.reason = "not run: the run was interrupted";
      run.scenarios.push_back(skipped);
      continue;
    }
    run.scenarios.push_back(RunOne(s));
  }
  run.context.duration_s = Since(start);
  if (listener_) listener_->OnRunEnd(run);
  return run;
}

}  // namespace lockstep
