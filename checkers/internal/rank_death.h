// How a rank that died is told apart, for `crash` and `teardown`: which exits are a death of the
// rank's own, which of those came after it had ended its run (its footer written), and the words
// for how it died.
#pragma once

#include <string>
#include <vector>

#include "harness/result/launch_report.h"
#include "harness/trace/trace_record.h"

namespace lockstep::internal {

// The rank died on its own (a non-zero exit code, a signal, or it left its peers waiting in a
// collective it never began), as the launcher saw it: not stopped by the launcher after another
// rank's death, nor a survivor whose collective failed because a peer died.
bool DiedOnItsOwn(const RankExit& exit);

// It died on its own after it had ended its run: its trace (`traces[exit.rank]`) holds its
// clean-exit footer (ExitedCleanly), written after its last step's record, and no peer began a
// collective, in a group this rank recorded, past the last one this rank began; so its process
// died in teardown (an exit handler, process-group destruction, the interpreter's finalization),
// not in training. A rank that left mid-run with a clean footer (a user's sys.exit(3) in the loop:
// the probe writes the footer at any clean interpreter exit) left its peers waiting in a
// collective it never began: that is a crash, never a teardown.
bool DiedInTeardown(const RankExit& exit, const std::vector<RankTrace>& traces);

// The launch ended in a way that had the launcher stop the ranks itself (a hang, a timeout, an
// interrupt, a harness error, a lost host, a failed launch or start-up): their signals are its
// own doing, no death of theirs.
bool LauncherStoppedTheRanks(LaunchEnding ending);

// "was killed by SIGABRT (6)", "exited with code 7", "ended".
std::string HowItDied(const RankExit& exit);

}  // namespace lockstep::internal
