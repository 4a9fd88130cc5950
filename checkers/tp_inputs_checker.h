// tp_inputs: the replicated inputs of tensor-parallel regions agree across their group. A module
// parallelized by torch.distributed.tensor.parallel whose input is declared `Replicate` over a mesh
// dim (ColwiseParallel's default, RowwiseParallel or PrepareModuleInput given input_layouts
// Replicate) computes with its own weight shard on what every rank of that dim must hold alike.
// When the ranks are fed different inputs (a dropout mask drawn from per-rank random states, a
// batch one rank read itself), each shard trains on other data, yet the row-parallel all-reduce
// still makes every output equal and no parameter or gradient that replica digests compare need
// differ. The probe records, per step, a digest over each such input's forwards
// (StepRecord::tp_inputs, trace 2.4) with the group of world ranks that must agree.
//
// Who is compared: for each module input, the ranks of each recorded group that recorded it that
// step (a DP x TP run has one TP group per data-parallel index, each judged alone). One finding, at
// the first step where any input differs, naming each module input and group; the odd ranks by
// majority, or every rank of the group where there is none (2 ranks: both).
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class TpInputsChecker : public Checker {
 public:
  std::string_view name() const override { return "tp_inputs"; }
  // It reads StepRecord::tp_inputs, which a streamed trace's folded steps drop as they drop
  // tensors: it judges step by step.
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;
};

}  // namespace lockstep
