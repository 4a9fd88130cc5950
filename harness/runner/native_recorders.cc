#include "harness/runner/native_recorders.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "harness/launcher/launch_command.h"

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

Result<NativeRecorders> ChooseRecorders(const std::string& spec, const NativeRecorders& built, bool preload_mpi) {
  if (spec == "auto") {
    NativeRecorders chosen = built;
    chosen.mpi = built.mpi && preload_mpi;
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

bool IsOpenMpiLauncher(const std::filesystem::path& mpirun) {
  FILE* out = popen((ShellQuote(mpirun.string()) + " --version 2>&1").c_str(), "r");
  if (out == nullptr) return false;
  std::string text;
  char buf[512];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), out)) > 0;) text.append(buf, n);
  const int status = pclose(out);
  return status == 0 && (text.find("Open MPI") != std::string::npos || text.find("OpenRTE") != std::string::npos);
}

void AddRecorderEnv(const NativeRecorders& chosen, const std::filesystem::path& dir,
                    std::map<std::string, std::string>& env, std::vector<std::string>* notes) {
  auto set_unless_inherited = [&](const char* var, const char* file, const char* what) {
    const std::string ours = (dir / file).string();
    if (const char* theirs = std::getenv(var); theirs != nullptr && *theirs != '\0' && ours != theirs) {
      if (notes) notes->push_back(std::string(var) + " is set (" + theirs + "): " + what + " are not recorded");
      return;
    }
    env[var] = ours;
  };
  if (chosen.mpi) env[kPreloadEnv] = (dir / kPmpiRecorderFile).string();
  if (chosen.nccl) set_unless_inherited("NCCL_PROFILER_PLUGIN", kNcclRecorderFile, "NCCL's communicators and collectives");
  if (chosen.cuda) set_unless_inherited("CUDA_INJECTION64_PATH", kCudaRecorderFile, "CUDA's device discovery calls");
}

}  // namespace lockstep
