#include "checkers/teardown_checker.h"

#include <algorithm>
#include <set>

#include "checkers/internal/check_util.h"
#include "checkers/internal/rank_death.h"

namespace lockstep {

std::vector<Finding> TeardownChecker::Check(const CheckContext& context) const {
  const LaunchEnding ending = context.launch.ending;
  if (internal::LauncherStoppedTheRanks(ending)) return {};
  const std::vector<RankTrace>& traces = context.traces;
  std::vector<RankExit> exits = context.launch.ranks;
  std::sort(exits.begin(), exits.end(), [](const RankExit& a, const RankExit& b) { return a.rank < b.rank; });

  Finding f;
  f.checker = std::string(name());
  std::vector<std::string> parts;
  std::set<int64_t> last_steps;
  for (const RankExit& e : exits) {
    if (!internal::DiedInTeardown(e, traces)) continue;
    f.ranks.push_back(e.rank);
    const std::optional<int64_t> last = internal::LastStep(traces[static_cast<size_t>(e.rank)]);
    std::string part = "rank " + std::to_string(e.rank) + " " + internal::HowItDied(e);
    if (last) {
      part += " after its last step (" + std::to_string(*last) + ") and its clean-exit footer";
      f.step = f.step ? std::min(*f.step, *last) : *last;
      f.details["rank" + std::to_string(e.rank) + "_last_step"] = std::to_string(*last);
    } else {
      part += " after its clean-exit footer (it recorded no step)";
    }
    if (!e.note.empty()) part += " [" + e.note + "]";
    parts.push_back(part);
  }
  if (f.ranks.empty()) return {};

  // Training completed when every rank ended its run itself: each trace has its clean-exit
  // footer, after its last step. A rank the launcher stopped when this one died has none: its
  // records end early, said here rather than claimed complete.
  std::vector<std::string> incomplete;
  const int world = internal::WorldSize(context.scenario, traces);
  for (int r = 0; r < world; ++r) {
    const RankTrace* t = static_cast<size_t>(r) < traces.size() ? &traces[static_cast<size_t>(r)] : nullptr;
    if (t == nullptr || !internal::HasData(*t)) {
      incomplete.push_back("rank " + std::to_string(r) + " wrote no trace");
      continue;
    }
    const std::optional<int64_t> last = internal::LastStep(*t);
    if (internal::ExitedCleanly(*t)) {
      if (last) last_steps.insert(*last);
      continue;
    }
    std::string what = "rank " + std::to_string(r) + "'s trace ends " +
                       (last ? "at step " + std::to_string(*last) : std::string("before any step")) +
                       " without its footer";
    for (const RankExit& e : exits) {
      if (e.rank == r && e.killed_by_launcher) what += " (stopped by the launcher)";
    }
    incomplete.push_back(what);
  }

  f.message = "teardown: " + internal::JoinCapped(parts, parts.size()) + ": " +
              (f.ranks.size() == 1 ? "it" : "they") +
              " had finished training and died on the way out (an exit handler, process-group destruction, the "
              "interpreter's finalization)";
  if (incomplete.empty()) {
    f.message += "; training completed: every rank's trace holds its last step";
    if (last_steps.size() == 1) f.message += " (" + std::to_string(*last_steps.begin()) + ")";
    f.message += " and its clean-exit footer, so every step's records are complete";
    f.details["training_completed"] = "true";
  } else {
    f.message += "; but " + internal::JoinCapped(incomplete, 8) + ": their records may stop short of the end";
    f.details["training_completed"] = "false";
  }
  return {f};
}

}  // namespace lockstep
