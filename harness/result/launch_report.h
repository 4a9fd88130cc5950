// How the ranks of one scenario ended, as the launcher saw it. Input to the `hang` and `crash`
// checkers; plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/name_table.h"

namespace lockstep {

enum class LaunchEnding {
  kClean,        // every rank exited 0 with a footer
  kCrash,        // a rank died (exit code != 0 or a signal)
  kHang,         // a rank made no progress for hang_timeout_s; the launcher killed the job
  kStartupTimeout,  // some rank had not recorded step 0 after startup_timeout_s (stalled_ranks)
  kRankError,    // a rank stopped on an error of the harness (configuration, environment,
                 // internal, its trace unwritable): RankExit::error says which
  kTimeout,      // the whole scenario ran past timeout_s
  kInterrupted,  // SIGINT/SIGTERM to `lockstep run`
  kLaunchFailed, // the ranks could not be started (mpirun missing, bad world size, ...)
  kNodeLost,     // a host of a multi-host launch stopped answering (its agent silent or gone):
                 // LaunchReport::lost_hosts; its ranks and the survivors are no crash of theirs
};
template <> const NameTable<LaunchEnding>& NamesOf<LaunchEnding>();
const char* ToString(LaunchEnding ending);

// A collective as one rank's trace shows it (the launcher reads only these fields).
struct CollectivePosition {
  std::string group;  // "world", "slice0", ...
  uint64_t seq = 0;
  std::string op;     // empty when the record did not say
  int64_t step = 0;
};

struct RankExit {
  int rank = 0;
  std::string host;              // where it ran, from its trace (empty when it never wrote one)
  std::optional<int> exit_code;  // set when it exited
  std::optional<int> signal;     // set when a signal killed it
  std::optional<int64_t> last_step;  // from its trace
  std::string note;              // e.g. "mpirun: exited on signal 9 (Killed)"
  std::optional<CollectivePosition> last_collective_begun;      // from its trace
  std::optional<CollectivePosition> last_collective_completed;  // from its trace
  bool trace_finished = false;   // its trace has a footer
  std::string error;             // the rank's own message when it stopped on a harness error
  bool killed_by_launcher = false;  // still running when the launcher ended the job (hang, timeout,
                                    // interrupt, another rank's crash): not a crash of its own
  bool failed_after_peer = false;  // its collective failed because another rank died first (its
                                  // error names the lost connection): not a crash of its own
  bool left_peers_waiting = false;  // it ended on its own, even cleanly (a user's sys.exit(0)),
                                    // while its peers waited in a collective it never began: the
                                    // crash is its own
};

// A host of a multi-host launch that stopped answering, and what it had recorded by then.
struct LostHost {
  std::string host;
  std::vector<int> ranks;             // the ranks that ran on it
  std::optional<int64_t> last_step;   // the last step all of them had recorded when it was last heard
  double silent_s = 0.0;              // how long it had been silent when judged lost
};

struct LaunchReport {
  LaunchEnding ending = LaunchEnding::kClean;
  // The spawning (harness/launcher/trace_folder.h) whose world the ending is of, a hang or a
  // start-up timeout in the world a program started itself (mp.spawn under `exec --ranks 1`):
  // then `ranks`, `stalled_ranks` and `message` are that world's. 0: the launched ranks'.
  int spawning = 0;
  std::vector<LostHost> lost_hosts;  // kNodeLost
  std::vector<RankExit> ranks;     // whatever is known per rank
  std::vector<int> stalled_ranks;  // hang: ranks whose trace stopped progressing first;
                                   // start-up timeout: the ranks that never started
  double duration_s = 0.0;
  std::string message;             // human explanation, e.g. the launcher's error
  std::string command;             // the launch command line
};

}  // namespace lockstep
