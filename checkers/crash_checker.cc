#include "checkers/crash_checker.h"

#include <string.h>  // sigabbrev_np (glibc >= 2.32)

#include <algorithm>

#include "checkers/internal/check_util.h"

namespace lockstep {
namespace {

std::string SignalName(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  return "signal " + std::to_string(sig);
}

}  // namespace

std::vector<Finding> CrashChecker::Check(const CheckContext& context) const {
  const LaunchEnding ending = context.launch.ending;
  // The launcher killed the ranks itself; their signals are its own doing.
  if (ending == LaunchEnding::kHang || ending == LaunchEnding::kTimeout || ending == LaunchEnding::kInterrupted ||
      ending == LaunchEnding::kLaunchFailed || ending == LaunchEnding::kStartupTimeout ||
      ending == LaunchEnding::kRankError || ending == LaunchEnding::kNodeLost) {
    return {};
  }
  const std::vector<RankTrace>& traces = context.traces;
  Finding f;
  f.checker = std::string(name());
  std::vector<std::string> parts;
  std::vector<RankExit> exits = context.launch.ranks;
  std::sort(exits.begin(), exits.end(), [](const RankExit& a, const RankExit& b) { return a.rank < b.rank; });
  for (const RankExit& e : exits) {
    const bool died = (e.exit_code && *e.exit_code != 0) || e.signal || e.left_peers_waiting;
    // Ranks the launcher stopped after another rank died carry its SIGTERM/SIGKILL, not a crash.
    // Nor are the survivors whose collective failed because a peer died: the peer's is the crash.
    if (!died || e.killed_by_launcher || e.failed_after_peer) continue;
    f.ranks.push_back(e.rank);
    const RankTrace* t = e.rank >= 0 && static_cast<size_t>(e.rank) < traces.size() ? &traces[e.rank] : nullptr;
    std::optional<int64_t> last = t ? internal::LastStep(*t) : std::nullopt;
    if (!last) last = e.last_step;
    std::string part = "rank " + std::to_string(e.rank) + " ";
    if (e.signal) part += "was killed by " + SignalName(*e.signal) + " (" + std::to_string(*e.signal) + ")";
    else if (e.exit_code) part += "exited with code " + std::to_string(*e.exit_code);
    else part += "ended";
    if (last) {
      // Finished every step: by the scenario's count, or, where the program decides how many
      // (lockstep exec: steps 0), by the footer its trace got at exit.
      const bool finished =
          context.scenario.steps > 0 ? *last >= context.scenario.steps : (t != nullptr && t->footer.has_value());
      const int64_t in_step = finished ? *last : *last + 1;
      part += " in step " + std::to_string(in_step) + " (last recorded step " + std::to_string(*last) + ")";
      f.step = f.step ? std::min(*f.step, in_step) : in_step;
      f.details["rank" + std::to_string(e.rank) + "_last_step"] = std::to_string(*last);
    } else {
      part += " before recording any step";
    }
    if (!e.note.empty()) part += " [" + e.note + "]";
    parts.push_back(part);
  }

  if (f.ranks.empty()) {
    if (ending != LaunchEnding::kCrash) return {};
    // The launcher knows a rank died but not which: name the ranks that did not exit cleanly.
    for (size_t r = 0; r < traces.size(); ++r) {
      if (!traces[r].footer) f.ranks.push_back(static_cast<int>(r));
    }
    f.message = "crash: the launcher reports a crash without a per-rank exit status; " +
                (f.ranks.empty() ? std::string("every trace has a clean-exit footer")
                                 : internal::RankPhrase(f.ranks) + " did not write a clean-exit footer");
    if (!context.launch.message.empty()) f.message += "; launcher: " + context.launch.message;
    return {f};
  }
  f.message = "crash: " + internal::JoinCapped(parts, parts.size());
  return {f};
}

}  // namespace lockstep
