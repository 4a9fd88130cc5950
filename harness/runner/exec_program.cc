#include "harness/runner/exec_program.h"

#include <cstdlib>
#include <optional>
#include <sstream>

#include "harness/runner/native_recorders.h"

namespace lockstep {
namespace {

// Under mpirun, srun or an enclosing job each rank learns its rank from the launcher's own
// variables; torchrun's names are filled in from them before COMMAND starts, so the program sees
// the same environment whatever started it. Variables already set are kept. kPreloadThenExec
// follows it.
// Under srun the ranks of this node are this node's entry of SLURM_STEP_TASKS_PER_NODE
// ("2(x2),1": 2, 2, 1 tasks on nodes 0, 1, 2), not the world size (SLURM_NTASKS_PER_NODE is set
// only when --ntasks-per-node was given).
constexpr const char* kTorchrunEnvFromJob =
    ": \"${RANK:=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${SLURM_PROCID:-${PMI_RANK:-0}}}}}\"; "
    ": \"${WORLD_SIZE:=${OMPI_COMM_WORLD_SIZE:-${SLURM_NTASKS:-${PMI_SIZE:-1}}}}\"; "
    ": \"${LOCAL_RANK:=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-0}}}\"; "
    "if [ -z \"$LOCAL_WORLD_SIZE\" ] && [ -z \"$OMPI_COMM_WORLD_LOCAL_SIZE\" ] && [ -n \"$SLURM_STEP_TASKS_PER_NODE\" ] && "
    "[ -n \"$SLURM_NODEID\" ]; then LOCAL_WORLD_SIZE=$(echo \"$SLURM_STEP_TASKS_PER_NODE\" | awk -F, -v n=\"$SLURM_NODEID\" "
    "'{k=0; for (i=1; i<=NF; i++) {c=$i; r=1; if (match(c, /\\(x[0-9]+\\)/)) {r=substr(c, RSTART+2, RLENGTH-3); "
    "c=substr(c, 1, RSTART-1)} for (j=0; j<r; j++) {if (k==n) {print c; exit} k++}}}'); fi; "
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
  // Words, not arguments: `sh -c "cd x && python3 train.py"` names its script inside one.
  std::vector<std::string> words;
  for (size_t i = 1; i < command.size(); ++i) {
    std::istringstream in(command[i]);
    for (std::string w; in >> w;) words.push_back(w);
  }
  auto is_script = [](const std::string& w) { return w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0; };
  // The program's own script is the last one a wrapper hands on (`python3 run.py train.py`,
  // `python -m torch.distributed.run train.py`, `accelerate launch train.py`), not the wrapper;
  // a script given as a long option's value (`--config conf.py`) is the program's input.
  std::optional<std::string> first, last;
  for (size_t i = 0; i < words.size(); ++i) {
    if (!is_script(words[i])) continue;
    if (!first) first = words[i];
    if (i == 0 || words[i - 1].rfind("--", 0) != 0) last = words[i];
  }
  if (last || first) return Stem(last ? *last : *first);
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == "-m") return words[i + 1];
  }
  return command.empty() ? "exec" : Stem(command[0]);
}

}  // namespace lockstep
