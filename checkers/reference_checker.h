// reference: the N-rank run against the 1-rank run of the same scenario, per step, on the loss
// and on the norm of every replicated tensor, with a tolerance derived from the scenario's own
// floating-point noise (docs/CHECKERS.md#reference).
//
// Two 1-rank runs serve as the reference: the plain one (CheckContext::reference: one process,
// the whole global batch at once) and a split one (CheckContext::reference_split: one process
// that computes the same global batch in the N ranks' pieces and accumulates their gradients).
// Both are exact in real arithmetic; their difference is pure rounding (reassociation), the same
// kind of difference an N-rank run shows. At step t the noise envelope is the largest relative
// difference between the two, over the loss and every tensor, at any step <= t (noise grows with
// the steps, never shrinks). A value of the N-rank run is flagged when it is farther from both
// references than
//     atol + (reference_rtol + kNoiseMargin * envelope(t)) * |reference value|
// `tolerances.reference_rtol` / `reference_atol` are the floor (default 1e-5 / 1e-6).
//
// The N-rank loss of a step is the mean of the ranks' losses (each rank's loss is the mean over
// its equal share of the global batch). Tensors are compared per rank, so a rank whose replica
// left the envelope is named; when every rank holds the same wrong value (ZeRO-1: a rank updated
// its own shard wrongly, then all-gathered it), the finding names the ranks whose shards hold
// the divergent tensors. Without a reference run: an error finding.
//
// It judges step by step (checkers/step_judge.h): the two references are 1-rank and held whole,
// the N-rank run streams past them, and only the first differing step's finding is kept.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

// The envelope is multiplied by this: a value must be an order of magnitude outside the
// measured noise to be flagged (docs/CHECKERS.md#reference gives the measured false-positive
// rate and detection floor).
inline constexpr double kNoiseMargin = 10.0;

class ReferenceChecker : public Checker {
 public:
  std::string_view name() const override { return "reference"; }
  std::string_view needs_scenario() const override { return "the scenario's 1-rank reference runs"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;
};

}  // namespace lockstep
