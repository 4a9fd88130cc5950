#include "checkers/loss_curve.h"

#include <utility>

#include "checkers/internal/check_util.h"

namespace lockstep {

std::map<int64_t, double> MeanLossCurve(const std::vector<RankTrace>& traces) {
  std::map<int64_t, std::pair<double, int>> sums;
  for (const RankTrace& t : traces) {
    if (!internal::HasData(t)) continue;
    for (const auto& [step, record] : internal::StepsByNumber(t)) {
      auto& [sum, n] = sums[step];
      sum += record->loss;
      ++n;
    }
  }
  std::map<int64_t, double> curve;
  for (const auto& [step, sn] : sums) curve[step] = sn.first / sn.second;
  return curve;
}

}  // namespace lockstep
