// The seam between the runner and the program it starts on every rank. A rank program says what
// it needs and can do (a scenario file, the companion runs it can make, whether it can run at all
// here), what to start for one launch (argv, extra environment) and how the report names its runs:
// the runner never builds a command line, and never branches on which program it runs.
// `lockstep-rank` (LockstepRankProgram) is one implementation; the user's own program under
// `lockstep exec` (ExecProgram) is another.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/launcher/launcher.h"
#include "harness/result/run_result.h"
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

// Where one launch's ranks read and write.
struct LaunchPaths {
  std::filesystem::path trace_dir;      // the ranks write rank-<r>.trace here
  std::filesystem::path scenario_file;  // the resolved scenario; empty when the program takes none
};

// Why a scenario does not run here at all: skipped (this build or machine cannot) or an error (it
// was asked for something that cannot be), decided before any rank starts.
struct Refusal {
  Outcome outcome = Outcome::kSkipped;
  std::string reason;
};

// How the report names a run before its traces say more. An empty backend is read from the
// traces (a program that picks its own).
struct RunLabel {
  std::string mode;
  std::string backend;
};

class RankProgram {
 public:
  virtual ~RankProgram() = default;
  // Whether this program can make `run`; a checker whose companion run is unsupported is skipped.
  virtual bool Supports(RankRun run) const = 0;
  // Whether the ranks read a scenario file. lockstep-rank does: the runner writes the resolved
  // scenario into each launch's folder. A program that does not (the user's own) has its
  // scenario-bound checkers skipped.
  virtual bool TakesScenarioFile() const = 0;
  // Whether the program can run to its end without writing a trace or a step (the probe in the
  // user's program may not load, or no optimizer ever steps): then a rank without either means
  // nothing was checked, an error, where for lockstep-rank it is what the crash checkers judge.
  virtual bool MayRunUnobserved() const = 0;
  // Why `scenario` cannot run under `launcher` here, if it cannot.
  virtual std::optional<Refusal> Refuses(const Scenario& scenario, LauncherKind launcher) const = 0;
  virtual RunLabel Label(const Scenario& scenario) const = 0;
  // What to start on every rank for `run` of `scenario`. Only called for runs the program supports.
  virtual RankInvocation Invocation(const Scenario& scenario, RankRun run, const LaunchPaths& paths) const = 0;
};

}  // namespace lockstep
