#include "harness/runner/scenario_runner.h"

#include "harness/launcher/launcher_kind.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>

#include "harness/core/build_info.h"
#include "harness/runner/judge.h"
#include "harness/runner/lockstep_rank_program.h"
#include "harness/runner/resolved_scenario.h"

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
    : options_(std::move(options)), listener_(listener) {
  LockstepRankOptions rank;
  rank.program = options_.rank_program;
  rank.fail_fast = options_.fail_fast;
  owned_program_ = std::make_unique<LockstepRankProgram>(std::move(rank));
  program_ = owned_program_.get();
  launches_ = std::make_unique<LaunchStage>(*program_, ProcessLauncher(), options_.launcher, options_.mpirun_args, options_.hosts,
                                            listener_);
}

ScenarioRunner::ScenarioRunner(RunOptions options, RunListener* listener, const RankProgram& program,
                               RankLauncher& launcher)
    : options_(std::move(options)), listener_(listener), program_(&program) {
  launches_ = std::make_unique<LaunchStage>(*program_, launcher, options_.launcher, options_.mpirun_args, options_.hosts, listener_);
}

ScenarioResult ScenarioRunner::RunOne(const Scenario& input) {
  const auto start = std::chrono::steady_clock::now();
  ResolvedScenario resolved = Resolve(input, options_.overrides, *program_, options_.launcher);
  const Scenario& scenario = resolved.scenario;
  // On several hosts given --nodes, the RUN line says on how many (never more than the ranks).
  LaunchSpec placed;
  placed.kind = options_.launcher;
  placed.hosts = options_.hosts;
  const int hosts = RunsOnNodes(placed) ? std::min(options_.hosts.nodes, scenario.ranks) : 0;
  if (listener_) listener_->OnScenarioStart(scenario.name, scenario.ranks, scenario.steps, hosts);
  ScenarioResult result =
      resolved.refused ? std::move(resolved.result) : LaunchAndJudge(scenario, std::move(resolved.result));
  result.duration_s = Since(start);
  if (listener_) listener_->OnScenarioEnd(result);
  return result;
}

ScenarioResult ScenarioRunner::LaunchAndJudge(const Scenario& scenario, ScenarioResult result) {
  const std::filesystem::path dir = options_.out_dir / scenario.name;
  Result<LaunchReport> launch = launches_->Launch(scenario, dir, RankRun::kMain);
  if (!launch.ok()) {
    result.outcome = Outcome::kError;
    result.reason = launch.status().ToString();
    return result;
  }
  Evidence evidence;
  evidence.scenario = scenario;
  evidence.trace_dir = dir / "traces";
  evidence.log_dir = dir / "logs";
  evidence.launch = *launch;
  evidence.have_scenario_file = program_->TakesScenarioFile();
  evidence.demand = program_->MayRunUnobserved() ? TraceDemand::kEveryRankSteps : TraceDemand::kNone;
  evidence.fixtures_dir = options_.fixtures_dir;
  evidence.platform = PlatformFingerprint(scenario);
  interrupted_ = interrupted_ || launch->ending == LaunchEnding::kInterrupted;
  // A launch that ended before its checks could judge it has no use for companion runs.
  if (!EndsBeforeTheChecks(launch->ending)) {
    evidence.companions = launches_->LaunchCompanions(
        scenario, dir, SkippedForWantOfInputs(scenario.checks, evidence.have_scenario_file, /*have_launch=*/true));
    interrupted_ = interrupted_ || !evidence.companions.interrupted_during.empty();
  }
  return Judge(evidence, std::move(result));
}

RunContext NewRunContext(const RunOptions& options) {
  RunContext context;
  context.versions = BuildInfoMap();
  context.host = HostName();
  context.git_sha = GetBuildInfo().git_sha;
  context.backend = options.overrides.backend ? ToString(*options.overrides.backend) : "per-scenario";
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
