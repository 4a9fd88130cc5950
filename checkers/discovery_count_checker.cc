#include "checkers/discovery_count_checker.h"

#include <algorithm>

#include "checkers/internal/check_util.h"

namespace lockstep {

std::vector<Finding> DiscoveryCountChecker::Check(const CheckContext& context) const {
  const size_t expected = static_cast<size_t>(std::max(0, context.scenario.expected_discovery_calls));
  Finding f;
  f.checker = std::string(name());
  std::vector<std::string> parts;
  for (size_t r = 0; r < context.traces.size(); ++r) {
    const RankTrace& t = context.traces[r];
    if (!internal::HasData(t)) continue;
    const size_t count = t.discoveries.size();
    if (count == expected) continue;
    // Too few calls only count once the rank got past start-up; one that died first is a crash.
    if (count < expected && !t.footer && t.steps.empty()) continue;
    const int rank = static_cast<int>(r);
    f.ranks.push_back(rank);
    std::string part = "rank " + std::to_string(rank) + " ran discovery " + std::to_string(count) +
                       (count == 1 ? " time" : " times") + ", expected " + std::to_string(expected);
    if (count > expected) {
      std::vector<std::string> extra;
      for (size_t i = expected; i < count; ++i) {
        const DiscoveryRecord& d = t.discoveries[i];
        extra.push_back("call " + std::to_string(d.call) + " from " + (d.phase.empty() ? "?" : d.phase) +
                        " at step " + std::to_string(d.step));
        f.step = f.step ? std::min(*f.step, d.step) : d.step;
      }
      part += ": extra " + internal::JoinCapped(extra, 10);
      f.details["rank" + std::to_string(rank) + "_extra_calls"] = internal::JoinCapped(extra, 100);
    }
    f.details["rank" + std::to_string(rank) + "_count"] = std::to_string(count);
    parts.push_back(part);
  }
  if (f.ranks.empty()) return {};
  f.message = internal::JoinCapped(parts, parts.size());
  f.details["expected"] = std::to_string(expected);
  return {f};
}

}  // namespace lockstep
