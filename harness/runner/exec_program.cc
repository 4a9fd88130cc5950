#include "harness/runner/exec_program.h"

#include <cstdlib>

#include "harness/runner/native_recorders.h"

namespace lockstep {
namespace {

// Under mpirun, srun or an enclosing job each rank learns its rank from the launcher's own
// variables; torchrun's names are filled in from them before COMMAND starts, so the program sees
// the same environment whatever started it. Variables already set are kept. kPreloadThenExec
// follows it.
constexpr const char* kTorchrunEnvFromJob =
    ": \"${RANK:=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${SLURM_PROCID:-${PMI_RANK:-0}}}}}\"; "
    ": \"${WORLD_SIZE:=${OMPI_COMM_WORLD_SIZE:-${SLURM_NTASKS:-${PMI_SIZE:-1}}}}\"; "
    ": \"${LOCAL_RANK:=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-0}}}\"; "
    ": \"${LOCAL_WORLD_SIZE:=${OMPI_COMM_WORLD_LOCAL_SIZE:-${SLURM_NTASKS_PER_NODE:-$WORLD_SIZE}}}\"; "
    ": \"${MASTER_ADDR:=127.0.0.1}\"; : \"${MASTER_PORT:=29500}\"; "
    "export RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT; ";

std::string Stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

}  // namespace

ExecProgram::ExecProgram(ExecProgramOptions options) : options_(std::move(options)) {}

RankInvocation ExecProgram::Invocation(const Scenario& scenario, RankRun, const LaunchPaths& paths) const {
  RankInvocation inv;
  const bool preload = options_.recorder_env.count(kPreloadEnv) > 0;
  if (options_.launcher == LauncherKind::kLocal && !preload) {
    inv.argv = options_.command;  // the local launcher sets torchrun's variables itself
  } else {
    const std::string job_env = options_.launcher == LauncherKind::kLocal ? "" : kTorchrunEnvFromJob;
    inv.argv = {"/bin/sh", "-c", job_env + kPreloadThenExec, "lockstep-exec"};
    inv.argv.insert(inv.argv.end(), options_.command.begin(), options_.command.end());
  }
  inv.env = options_.recorder_env;
  inv.env[kProbeEnableEnv] = "1";
  inv.env[kProbeTraceDirEnv] = std::filesystem::absolute(paths.trace_dir).string();
  inv.env[kProbeRunNameEnv] = scenario.name;
  if (!options_.probe_dir.empty()) {
    inv.env["PYTHONPATH"] = options_.probe_dir.string() +
                            (options_.python_path.empty() ? std::string() : ":" + options_.python_path);
  }
  return inv;
}

std::filesystem::path FindProbeDir(const std::filesystem::path& program_dir) {
  std::filesystem::path dir = program_dir.parent_path() / "python";
  if (const char* path = std::getenv(kProbePathEnv); path && *path) dir = path;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  return std::filesystem::weakly_canonical(dir, ec);
}

std::string ExecScenarioId(const std::vector<std::string>& command) {
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    if (arg == "-m" && i + 1 < command.size()) return command[i + 1];
    if (arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".py") == 0) return Stem(arg);
  }
  return command.empty() ? "exec" : Stem(command[0]);
}

}  // namespace lockstep
