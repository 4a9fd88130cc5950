// The seam between the runner and the program it starts on every rank. A rank program says what
// to start for one launch (argv, extra environment) and which companion runs it can make: the
// runner never builds a command line itself. `lockstep-rank` (LockstepRankProgram) is one
// implementation; the user's own program under `lockstep exec` (ExecProgram) is another.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario/scenario.h"

namespace lockstep {

// What a launch is for: the run itself, or a companion run a checker needs.
enum class RankRun {
  kMain,            // the scenario on its N ranks
  kReference,       // 1 rank, the whole global batch (the `reference` checker)
  kReferenceSplit,  // 1 rank, the global batch in the N ranks' pieces (reference's noise floor)
  kRepeat,          // the scenario again (the `determinism` checker)
  kRepro,           // the scenario up to a step, saving tensors (`lockstep repro`)
};
// "main", "reference", "reference-split", "repeat", "repro": also the companion run's folder.
const char* ToString(RankRun run);

// One rank's command line and the environment it gets on top of the launcher's.
struct RankInvocation {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};

class RankProgram {
 public:
  virtual ~RankProgram() = default;
  // Whether this program can make `run`; a checker whose companion run is unsupported is skipped.
  virtual bool Supports(RankRun run) const = 0;
  // What to start on every rank for `run` of `scenario`; the ranks write rank-<r>.trace into
  // `trace_dir`. Only called for runs the program supports.
  virtual RankInvocation Invocation(const Scenario& scenario, RankRun run,
                                    const std::filesystem::path& trace_dir) const = 0;
};

}  // namespace lockstep
