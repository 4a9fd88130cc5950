#include "checkers/internal/rank_death.h"

#include <string.h>  // sigabbrev_np (glibc >= 2.32)

#include <algorithm>
#include <map>

#include "checkers/internal/check_util.h"

namespace lockstep::internal {
namespace {

std::string SignalName(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  return "signal " + std::to_string(sig);
}

// Whether some other rank began a collective, in a group `rank` recorded, past the last one `rank`
// began there: it waited on `rank`, which had left. Groups `rank` never recorded say nothing (it
// may not be a member).
bool LeftAPeerWaiting(int rank, const std::vector<RankTrace>& traces) {
  std::map<std::string, uint64_t> last_begun;
  for (const CollectiveRecord& c : traces[static_cast<size_t>(rank)].collectives) {
    uint64_t& seq = last_begun[c.group];
    seq = std::max(seq, c.seq);
  }
  for (size_t q = 0; q < traces.size(); ++q) {
    if (static_cast<int>(q) == rank) continue;
    for (const CollectiveRecord& c : traces[q].collectives) {
      auto mine = last_begun.find(c.group);
      if (mine != last_begun.end() && c.seq > mine->second) return true;
    }
  }
  return false;
}

}  // namespace

bool LauncherStoppedTheRanks(LaunchEnding ending) {
  return ending == LaunchEnding::kHang || ending == LaunchEnding::kTimeout || ending == LaunchEnding::kInterrupted ||
         ending == LaunchEnding::kLaunchFailed || ending == LaunchEnding::kStartupTimeout ||
         ending == LaunchEnding::kRankError || ending == LaunchEnding::kNodeLost;
}

bool DiedOnItsOwn(const RankExit& exit) {
  const bool died = (exit.exit_code && *exit.exit_code != 0) || exit.signal || exit.left_peers_waiting;
  return died && !exit.killed_by_launcher && !exit.failed_after_peer;
}

bool DiedInTeardown(const RankExit& exit, const std::vector<RankTrace>& traces) {
  if (!DiedOnItsOwn(exit) || exit.left_peers_waiting) return false;
  if (exit.rank < 0 || static_cast<size_t>(exit.rank) >= traces.size()) return false;
  return ExitedCleanly(traces[static_cast<size_t>(exit.rank)]) && !LeftAPeerWaiting(exit.rank, traces);
}

std::string HowItDied(const RankExit& exit) {
  if (exit.signal) return "was killed by " + SignalName(*exit.signal) + " (" + std::to_string(*exit.signal) + ")";
  if (exit.exit_code) return "exited with code " + std::to_string(*exit.exit_code);
  return "ended";
}

}  // namespace lockstep::internal
