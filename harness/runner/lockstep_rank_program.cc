#include "harness/runner/lockstep_rank_program.h"

#include <cstdlib>

#include "harness/core/build_info.h"
#include "harness/runner/native_recorders.h"

namespace lockstep {
namespace {

// NCCL needs a GPU; without one every rank would fail in ncclCommInitRank.
bool GpuVisible() {
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    const std::string v = visible;
    if (v.empty() || v == "-1" || v == "NoDevFiles") return false;
  }
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidia0", ec) || std::filesystem::exists("/dev/dxg", ec);
}

constexpr const char* kNoGpu = "no GPU is visible on this machine (no /dev/nvidia0, or CUDA_VISIBLE_DEVICES hides them all)";

}  // namespace

LockstepRankProgram::LockstepRankProgram(LockstepRankOptions options) : options_(std::move(options)) {
  // NCCL's and CUDA's discovery and NCCL's collectives, recorded when those libraries load (a GPU
  // run); lockstep-rank links the PMPI wrappers itself, so MPI needs no preload. Chosen once: the
  // libraries and the user's own variables do not change between launches.
  const std::filesystem::path recorders = RecorderDir(options_.program.parent_path());
  NativeRecorders chosen = BuiltRecorders(recorders);
  chosen.mpi = false;
  AddRecorderEnv(chosen, recorders, recorder_env_);
}

bool LockstepRankProgram::Supports(RankRun run) const {
  return run != RankRun::kRepro || options_.repro.has_value();
}

std::optional<Refusal> LockstepRankProgram::Refuses(const Scenario& scenario, LauncherKind launcher) const {
  if (scenario.backend == Backend::kNccl && !GetBuildInfo().have_nccl) {
    return Refusal{Outcome::kSkipped, "backend nccl: this build has no NCCL (configure with CUDA and NCCL present)"};
  }
  if (scenario.backend == Backend::kNccl && !GpuVisible()) {
    return Refusal{Outcome::kSkipped, std::string("backend nccl: ") + kNoGpu};
  }
  // Asked for, not merely allowed: a cuda run that cannot have a GPU is the harness's problem,
  // never a run on the CPU instead.
  if (scenario.device == Device::kCuda && !GpuVisible()) return Refusal{Outcome::kError, std::string("device cuda: ") + kNoGpu};
  // Plain processes have no MPI world to join.
  if (scenario.backend == Backend::kMpi && launcher == LauncherKind::kLocal) {
    return Refusal{Outcome::kError,
                   "backend mpi cannot run under --launcher local: it starts plain processes with RANK/WORLD_SIZE, "
                   "which MPI does not read (use --launcher mpirun or srun, or backend gloo)"};
  }
  return std::nullopt;
}

RunLabel LockstepRankProgram::Label(const Scenario& scenario) const {
  std::string mode = ToString(scenario.parallel.mode);
  if (scenario.slices > 1) mode += "/slices=" + std::to_string(scenario.slices);
  return {mode, ToString(scenario.backend)};
}

RankInvocation LockstepRankProgram::Invocation(const Scenario&, RankRun run, const LaunchPaths& paths) const {
  RankInvocation inv;
  inv.argv = {options_.program.string(), "--scenario", paths.scenario_file.string(), "--trace-dir",
              paths.trace_dir.string()};
  switch (run) {
    case RankRun::kMain:
    case RankRun::kRepeat:  // the same run again, so that determinism compares like with like
      if (options_.fail_fast) inv.argv.push_back("--fail-fast");
      break;
    case RankRun::kReference:
      inv.argv.push_back("--reference");
      break;
    case RankRun::kReferenceSplit:
      inv.argv.push_back("--reference-split");
      break;
    case RankRun::kRepro: {
      std::string patterns;
      for (const auto& p : options_.repro->dump_patterns) patterns += (patterns.empty() ? "" : ",") + p;
      inv.argv.insert(inv.argv.end(), {"--stop-after-step", std::to_string(options_.repro->stop_after_step),
                                       "--dump-tensors", patterns, "--dump-dir", options_.repro->dump_dir.string()});
      break;
    }
  }
  inv.env = recorder_env_;
  return inv;
}

}  // namespace lockstep
