#include "harness/launcher/stall_judgement.h"

#include <algorithm>

namespace lockstep {

std::vector<int> BusyRanks(const StallVerdict& v) {
  std::vector<int> busy = v.working;
  busy.insert(busy.end(), v.unseen.begin(), v.unseen.end());
  std::sort(busy.begin(), busy.end());
  return busy;
}

StallVerdict JudgeStall(const std::vector<RankActivity>& ranks, double quiet_for_s, double hang_timeout_s,
                        double quiet_timeout_s) {
  StallVerdict v;
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    const RankActivity& a = ranks[static_cast<size_t>(r)];
    if (a.finished) continue;
    if (a.in_collective) {
      v.waiting.push_back(r);
    } else if (!a.cpu_share) {
      v.unseen.push_back(r);
    } else if (*a.cpu_share >= kBusyCpuShare) {
      v.working.push_back(r);
    } else {
      v.idle.push_back(r);
    }
  }
  const bool someone_may_work = !v.working.empty() || !v.unseen.empty();
  if (!someone_may_work) {
    if (hang_timeout_s > 0 && quiet_for_s > hang_timeout_s) v.kind = StallKind::kWaiting;
  } else if (quiet_timeout_s > 0 && quiet_for_s > quiet_timeout_s) {
    v.kind = StallKind::kQuietTooLong;
  }
  return v;
}

}  // namespace lockstep
