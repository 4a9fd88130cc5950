#include "checkers/reference_checker.h"

#include <cmath>
#include <map>

#include "checkers/internal/check_util.h"
#include "checkers/loss_curve.h"

namespace lockstep {

std::vector<Finding> ReferenceChecker::Check(const CheckContext& context) const {
  Finding f;
  f.checker = std::string(name());
  if (!context.reference || context.reference->empty()) {
    f.outcome = FindingOutcome::kError;
    f.message = "no 1-rank reference run to compare the loss curve with";
    return {f};
  }
  const std::map<int64_t, double> ref = MeanLossCurve(*context.reference);
  const std::map<int64_t, double> run = MeanLossCurve(context.traces);
  const double rtol = context.scenario.tolerances.reference_rtol;
  const double atol = context.scenario.tolerances.reference_atol;

  int compared = 0;
  std::optional<int64_t> first;
  int differing = 0;
  for (const auto& [step, loss] : run) {
    auto it = ref.find(step);
    if (it == ref.end()) continue;
    const double r = it->second;
    // Step 0 records NaN everywhere; NaN against NaN is not a difference.
    if (std::isnan(loss) && std::isnan(r)) continue;
    ++compared;
    const bool close = std::isfinite(loss) && std::isfinite(r) ? std::fabs(loss - r) <= atol + rtol * std::fabs(r)
                                                               : internal::SameDouble(loss, r);
    if (close) continue;
    ++differing;
    if (!first) {
      first = step;
      const double rel = r != 0 ? std::fabs(loss - r) / std::fabs(r) : std::fabs(loss - r);
      f.step = step;
      f.message = "loss at step " + std::to_string(step) + " is " + internal::FormatNumber(loss, 10) + " with " +
                  std::to_string(context.traces.size()) + " ranks but " + internal::FormatNumber(r, 10) +
                  " in the 1-rank reference (relative difference " + internal::FormatNumber(rel, 3) +
                  ", tolerance rtol " + internal::FormatNumber(rtol, 3) + " + atol " + internal::FormatNumber(atol, 3) + ")";
      f.details["loss"] = internal::FormatExact(loss);
      f.details["reference_loss"] = internal::FormatExact(r);
      f.details["rel_diff"] = internal::FormatNumber(rel, 3);
    }
  }
  if (compared == 0) {
    f.outcome = FindingOutcome::kError;
    f.message = "the run and its 1-rank reference share no step with a loss to compare";
    return {f};
  }
  if (!first) return {};
  if (differing > 1) {
    f.message += "; " + std::to_string(differing - 1) + " later step" + (differing == 2 ? "" : "s") + " differ too";
    f.details["differing_steps"] = std::to_string(differing);
  }
  return {f};
}

}  // namespace lockstep
