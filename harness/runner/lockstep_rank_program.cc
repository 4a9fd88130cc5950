#include "harness/runner/lockstep_rank_program.h"

#include "harness/runner/native_recorders.h"

namespace lockstep {

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

RankInvocation LockstepRankProgram::Invocation(const Scenario& scenario, RankRun run,
                                               const std::filesystem::path& trace_dir) const {
  RankInvocation inv;
  inv.argv = {options_.program.string(), "--scenario", scenario.location.file, "--trace-dir", trace_dir.string()};
  if (options_.backend) inv.argv.insert(inv.argv.end(), {"--backend", ToString(*options_.backend)});
  if (options_.device) inv.argv.insert(inv.argv.end(), {"--device", ToString(*options_.device)});
  if (options_.ranks) inv.argv.insert(inv.argv.end(), {"--ranks", std::to_string(*options_.ranks)});
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
