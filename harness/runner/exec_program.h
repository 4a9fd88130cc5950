// The user's own training program as a rank program (`lockstep exec -- COMMAND ...`): every rank
// runs COMMAND unchanged with torchrun's environment and the probe's (docs/PROBE.md): the probe
// folder first on PYTHONPATH, so that the interpreter loads it at start, and where to write the
// trace. It makes the run only: no reference, repeat or repro run of a program lockstep did not
// write.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "harness/launcher/launcher.h"
#include "harness/runner/rank_program.h"

namespace lockstep {

// The environment the probe reads (the probe/ contract).
inline constexpr const char* kProbeEnableEnv = "LOCKSTEP_PROBE";
inline constexpr const char* kProbeTraceDirEnv = "LOCKSTEP_TRACE_DIR";
inline constexpr const char* kProbeRunNameEnv = "LOCKSTEP_RUN_NAME";
inline constexpr const char* kProbePathEnv = "LOCKSTEP_PROBE_PATH";

struct ExecProgramOptions {
  std::vector<std::string> command;  // COMMAND ARGS..., argv[0] resolved to a path
  LauncherKind launcher = LauncherKind::kLocal;
  std::filesystem::path probe_dir;   // the staged probe package; empty: none (not built)
  std::string python_path;           // PYTHONPATH of the environment lockstep runs in
  // The native recorders' variables (harness/runner/native_recorders.h: AddRecorderEnv); with
  // LOCKSTEP_PRELOAD among them, COMMAND starts through a shell that preloads that library.
  std::map<std::string, std::string> recorder_env;
};

class ExecProgram : public RankProgram {
 public:
  explicit ExecProgram(ExecProgramOptions options);
  bool Supports(RankRun run) const override { return run == RankRun::kMain; }
  bool TakesScenarioFile() const override { return false; }
  bool MayRunUnobserved() const override { return true; }
  std::optional<Refusal> Refuses(const Scenario&, LauncherKind) const override { return std::nullopt; }
  // The program picks its backend; its traces say which.
  RunLabel Label(const Scenario&) const override { return {"program", ""}; }
  RankInvocation Invocation(const Scenario& scenario, RankRun run, const LaunchPaths& paths) const override;

 private:
  ExecProgramOptions options_;
};

// Where the probe is: $LOCKSTEP_PROBE_PATH when set, else <program_dir>/../python (the build's
// staging folder). Empty when that folder does not exist.
std::filesystem::path FindProbeDir(const std::filesystem::path& program_dir);

// The scenario id of an exec'd command: the stem of the program's own script, the last word ending
// in .py that is not a long option's value (so a wrapper's script is passed over: `python3 run.py
// train.py` is "train"), else the module after -m, else the program ("train" for `python3 train.py`).
std::string ExecScenarioId(const std::vector<std::string>& command);

}  // namespace lockstep
