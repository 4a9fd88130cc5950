#include "harness/runner/native_recorders.h"

#include <cstdlib>
#include <sstream>

namespace lockstep {

const char* const kPreloadThenExec =
    "if [ -n \"${LOCKSTEP_PRELOAD:-}\" ]; then export LD_PRELOAD=\"$LOCKSTEP_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}\"; fi; "
    "exec \"$@\"";

std::filesystem::path RecorderDir(const std::filesystem::path& program_dir) {
  return program_dir.parent_path() / "lib";
}

NativeRecorders BuiltRecorders(const std::filesystem::path& dir) {
  std::error_code ec;
  NativeRecorders built;
  built.mpi = std::filesystem::is_regular_file(dir / kPmpiRecorderFile, ec);
  built.nccl = std::filesystem::is_regular_file(dir / kNcclRecorderFile, ec);
  built.cuda = std::filesystem::is_regular_file(dir / kCudaRecorderFile, ec);
  return built;
}

Result<NativeRecorders> ChooseRecorders(const std::string& spec, const NativeRecorders& built, LauncherKind launcher) {
  if (spec == "auto") {
    NativeRecorders chosen = built;
    chosen.mpi = built.mpi && launcher == LauncherKind::kMpirun;
    return chosen;
  }
  NativeRecorders chosen;
  if (spec == "none") return chosen;
  std::istringstream names(spec);
  for (std::string name; std::getline(names, name, ',');) {
    bool* on = name == "mpi" ? &chosen.mpi : name == "nccl" ? &chosen.nccl : name == "cuda" ? &chosen.cuda : nullptr;
    if (on == nullptr) {
      return InvalidArgumentError("--recorders " + spec + ": unknown recorder \"" + name +
                                  "\"; expected auto, none, or a comma-separated list of mpi, nccl, cuda");
    }
    const bool is_built = name == "mpi" ? built.mpi : name == "nccl" ? built.nccl : built.cuda;
    if (!is_built) {
      const char* file = name == "mpi" ? kPmpiRecorderFile : name == "nccl" ? kNcclRecorderFile : kCudaRecorderFile;
      return InvalidArgumentError("--recorders " + spec + ": the " + name + " recorder (" + file +
                                  ") was not built with this lockstep");
    }
    *on = true;
  }
  return chosen;
}

void AddRecorderEnv(const NativeRecorders& chosen, const std::filesystem::path& dir,
                    std::map<std::string, std::string>& env, std::vector<std::string>* notes) {
  auto set_unless_inherited = [&](const char* var, const char* file, const char* what) {
    if (const char* mine = std::getenv(var); mine != nullptr && *mine != '\0') {
      if (notes) notes->push_back(std::string(var) + " is set (" + mine + "): " + what + " are not recorded");
      return;
    }
    env[var] = (dir / file).string();
  };
  if (chosen.mpi) env[kPreloadEnv] = (dir / kPmpiRecorderFile).string();
  if (chosen.nccl) set_unless_inherited("NCCL_PROFILER_PLUGIN", kNcclRecorderFile, "NCCL's communicators and collectives");
  if (chosen.cuda) set_unless_inherited("CUDA_INJECTION64_PATH", kCudaRecorderFile, "CUDA's device discovery calls");
}

}  // namespace lockstep
