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

namespace {

// Each recorder once: its --recorders name, its library, its flag.
struct Recorder {
  const char* name;
  const char* file;
  bool NativeRecorders::*on;
};
constexpr Recorder kRecorders[] = {
    {"mpi", kPmpiRecorderFile, &NativeRecorders::mpi},
    {"nccl", kNcclRecorderFile, &NativeRecorders::nccl},
    {"cuda", kCudaRecorderFile, &NativeRecorders::cuda},
};

}  // namespace

NativeRecorders BuiltRecorders(const std::filesystem::path& dir) {
  NativeRecorders built;
  for (const Recorder& r : kRecorders) {
    std::error_code ec;
    built.*r.on = std::filesystem::is_regular_file(dir / r.file, ec);
  }
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
    const Recorder* recorder = nullptr;
    for (const Recorder& r : kRecorders) {
      if (name == r.name) recorder = &r;
    }
    if (recorder == nullptr) {
      return InvalidArgumentError("--recorders " + spec + ": unknown recorder \"" + name +
                                  "\"; expected auto, none, or a comma-separated list of mpi, nccl, cuda");
    }
    if (!(built.*recorder->on)) {
      return InvalidArgumentError("--recorders " + spec + ": the " + name + " recorder (" + recorder->file +
                                  ") was not built with this lockstep");
    }
    chosen.*recorder->on = true;
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
