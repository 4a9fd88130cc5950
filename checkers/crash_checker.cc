#include "checkers/crash_checker.h"

#include <algorithm>

#include "checkers/internal/check_util.h"
#include "checkers/internal/rank_death.h"

namespace lockstep {

std::vector<Finding> CrashChecker::Check(const CheckContext& context) const {
  const LaunchEnding ending = context.launch.ending;
  if (internal::LauncherStoppedTheRanks(ending)) return {};
  const std::vector<RankTrace>& traces = context.traces;
  Finding f;
  f.checker = std::string(name());
  std::vector<std::string> parts;
  std::vector<RankExit> exits = context.launch.ranks;
  std::sort(exits.begin(), exits.end(), [](const RankExit& a, const RankExit& b) { return a.rank < b.rank; });
  bool teardown_deaths = false;
  for (const RankExit& e : exits) {
    // Ranks the launcher stopped after another rank died carry its SIGTERM/SIGKILL, not a crash.
    // Nor are the survivors whose collective failed because a peer died: the peer's is the crash.
    if (!internal::DiedOnItsOwn(e)) continue;
    // A rank that died after its footer had finished training: `teardown` names it.
    if (internal::DiedInTeardown(e, traces)) {
      teardown_deaths = true;
      continue;
    }
    f.ranks.push_back(e.rank);
    const RankTrace* t = e.rank >= 0 && static_cast<size_t>(e.rank) < traces.size() ? &traces[e.rank] : nullptr;
    std::optional<int64_t> last = t ? internal::LastStep(*t) : std::nullopt;
    if (!last) last = e.last_step;
    std::string part = "rank " + std::to_string(e.rank) + " " + internal::HowItDied(e);
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
    // Every rank that died had ended its run: no crash in training.
    if (ending != LaunchEnding::kCrash || teardown_deaths) return {};
    // The launcher knows a rank died but not which (it saw one process: a program that started
    // its own ranks): name the ranks that did not exit cleanly, and where their traces stop.
    std::vector<std::string> where;
    for (size_t r = 0; r < traces.size(); ++r) {
      if (traces[r].footer) continue;
      const int rank = static_cast<int>(r);
      f.ranks.push_back(rank);
      const std::optional<int64_t> last = internal::LastStep(traces[r]);
      if (!last) {
        where.push_back("rank " + std::to_string(rank) + " before recording any step");
        continue;
      }
      where.push_back("rank " + std::to_string(rank) + " in step " + std::to_string(*last + 1) +
                      " (last recorded step " + std::to_string(*last) + ")");
      f.step = f.step ? std::min(*f.step, *last + 1) : *last + 1;
      f.details["rank" + std::to_string(rank) + "_last_step"] = std::to_string(*last);
    }
    f.message = "crash: the launcher reports a crash without a per-rank exit status; " +
                (f.ranks.empty() ? std::string("every trace has a clean-exit footer")
                                 : internal::RankPhrase(f.ranks) + " did not write a clean-exit footer: " +
                                       internal::JoinCapped(where, 8));
    if (!context.launch.message.empty()) f.message += "; launcher: " + context.launch.message;
    return {f};
  }
  f.message = "crash: " + internal::JoinCapped(parts, parts.size());
  return {f};
}

}  // namespace lockstep
