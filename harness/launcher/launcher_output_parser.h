// Reads what mpirun (Open MPI 4 and 5), srun or torchrun printed when a job ended badly: which
// rank died, with which exit code or signal, or why nothing could be started. The messages are
// Open MPI's help texts (help-errmgr-base.txt, help-orterun.txt), srun's "task N: ..." errors and
// torchrun's ChildFailedError summary (accelerate launch prints torchrun's); their
// line breaks vary, so the text is matched with whitespace folded.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace lockstep {

struct LauncherRankFailure {
  int rank = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string message;  // the launcher's words, one line
};

struct LauncherOutputFacts {
  std::vector<LauncherRankFailure> failures;  // in the order the launcher named them, one per rank
  std::optional<std::string> launch_error;    // the job could not start (program missing, root, ...)
};

LauncherOutputFacts ParseLauncherOutput(const std::string& text);

}  // namespace lockstep
