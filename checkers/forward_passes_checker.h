// forward_passes: every replica runs the same number of training forward passes in a step
// (StepRecord::forwards, recorded by the probe since trace 2.5). A rank that skips a batch on a
// condition of its own (a non-finite loss it alone saw: no backward, no optimizer step) runs its
// next batch's forward in the same step, so from there its steps pair with the other ranks'
// neighbouring ones: its collectives still line up (each step's all-reduce meets the others' one
// step earlier), and the weights may stay equal, until the run ends in a mismatch or a hang steps
// later. Counted, the skip shows at the step it happens.
//
// Who is compared: the ranks that hold replicas of the same parameters (internal/replica_units.h,
// as optimizer_settings), among those that recorded a count that step. One finding, at the first
// step where the counts differ, naming each unit's odd ranks by majority, or every rank that
// disagrees where there is none (2 ranks: both).
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class ForwardPassesChecker : public Checker {
 public:
  std::string_view name() const override { return "forward_passes"; }
  // It reads the step's parameters' replica groups, which a streamed trace's folded steps drop:
  // it judges step by step.
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;
};

}  // namespace lockstep
