// reference: the N-rank loss curve matches the 1-rank run of the same scenario
// (CheckContext::reference) within scenario.tolerances: |loss - ref| <= atol + rtol * |ref|, as
// numpy.isclose. The N-rank loss of a step is the mean of the ranks' recorded losses: each rank
// records the mean loss of its equal share of the global batch, so their mean is the global-batch
// loss the 1-rank run computes. Without a reference run: an error finding.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class ReferenceChecker : public Checker {
 public:
  std::string_view name() const override { return "reference"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
