// How a launch ended, judged from what the launcher observed: a pure function of plain data
// (the ranks' trace progress, exits, signals seen, the watch loop's conclusion), so that every
// rule (a survivor's failed collective is its dead peer's crash, a harness error is never the
// program's, a rank that left its peers waiting is the cause, ...) is tested without processes,
// as stall_judgement.h is. launcher.cc gathers the observation; this file writes the report.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/launcher/launch_spec.h"
#include "harness/launcher/stall_judgement.h"
#include "harness/launcher/trace_watcher.h"
#include "harness/result/launch_report.h"

namespace lockstep {

// One rank as the launcher saw it when the launch ended.
struct RankObservation {
  RankProgress progress;   // from its trace
  RankExit exit;           // rank, exit code, signal and note as far as seen (rank set)
  bool still_running = false;  // its process was alive when the launcher ended the launch
  // When it failed without a footer: its log's last "lockstep-rank R: <message>" (the harness's
  // last words), and the trace file system's being full, each "" when not so.
  std::string log_error;
  std::string full_disk_error;
  std::string describe;    // one line: last step, collectives (TraceWatcher::Describe)
};

struct LaunchObservation {
  LaunchEnding ending = LaunchEnding::kClean;  // what the watch loop concluded
  LauncherKind kind = LauncherKind::kLocal;
  bool direct = true;      // lockstep started each rank itself (launcher_kind.h)
  std::vector<RankObservation> ranks;
  std::vector<int> failed_ranks;  // ranks seen dying on their own, in the order seen
  // Ranks whose process was seen ending without a footer, with the signal it ended by where seen.
  std::map<int, std::optional<int>> ending_ranks;
  // Hang: the judgement that ended it, how long nothing moved, and the ranks the others waited
  // for (TraceWatcher::StalledRanks). Start-up timeout: the ranks that never started.
  StallVerdict stall;
  double quiet_for_s = 0;
  std::vector<int> watcher_stalled;
  std::vector<int> startup_stalled;
  int interrupt_signal = 0;
  std::string launcher_message;   // what the watch loop already said (a job launcher's output)
  double hang_timeout_s = 0, quiet_timeout_s = 0, startup_timeout_s = 0, timeout_s = 0;
  double duration_s = 0;
  std::string command;
  std::vector<LostHost> lost_hosts;  // kNodeLost: the hosts that stopped answering
};

LaunchReport JudgeLaunch(const LaunchObservation& seen);

// strsignal's name of `sig` ("Killed"), for the notes.
std::string SignalDescription(int sig);

}  // namespace lockstep
