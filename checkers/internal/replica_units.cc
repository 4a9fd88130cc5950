#include "checkers/internal/replica_units.h"

#include <algorithm>
#include <memory>
#include <utility>

namespace lockstep::internal {

std::vector<ReplicaUnit> ReplicaUnitsOf(const std::vector<const StepRecord*>& records) {
  std::vector<int> present;
  for (size_t r = 0; r < records.size(); ++r) {
    if (records[r] != nullptr) present.push_back(static_cast<int>(r));
  }
  std::vector<std::shared_ptr<const ReplicaGroup>> groups;
  bool world = false;
  for (const StepRecord* s : records) {
    if (s == nullptr) continue;
    for (const TensorRecord& t : s->tensors) {
      if (t.kind != TensorKind::kParam || !t.replicated) continue;
      if (t.group == nullptr) {
        world = true;
      } else if (std::none_of(groups.begin(), groups.end(),
                              [&](const auto& g) { return SameReplicaGroup(g, t.group); })) {
        groups.push_back(t.group);
      }
    }
  }
  std::vector<ReplicaUnit> units;
  if (world || groups.empty()) units.push_back(ReplicaUnit{present, ""});
  for (const auto& g : groups) {
    ReplicaUnit u{{}, " in replica group " + DescribeReplicaGroup(*g)};
    for (int r : g->ranks) {
      if (r >= 0 && static_cast<size_t>(r) < records.size() && records[static_cast<size_t>(r)] != nullptr) {
        u.ranks.push_back(r);
      }
    }
    units.push_back(std::move(u));
  }
  return units;
}

}  // namespace lockstep::internal
