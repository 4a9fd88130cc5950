// optimizer_settings: the settings every replica's optimizer ran a step with agree: each param
// group's learning rate, betas, momentum, weight decay and eps, and the max_norm of the step's
// gradient clipping (StepRecord::optimizer, recorded by the probe since trace 2.3). A scheduler
// stepped on one rank only, or a learning rate computed from a rank's own progress, is caught at
// the first step that runs with it, even while the gradients are zero and the weights still agree.
//
// Who is compared: the ranks that hold replicas of the same parameters, as replica_weights groups
// them: each replica group a parameter of the step names (HSDP's replicas of one shard, a
// pipeline stage's data-parallel ranks), or every rank that recorded the step where its
// parameters name none (DDP, or a fully sharded model, whose shards train with one schedule too).
// A setting is compared among the ranks that recorded it: a rank with fewer param groups (a
// hand-written sharded optimizer) or that clipped nothing is no disagreement by itself. One finding,
// at the first step where any setting differs, naming each setting, param group, ranks and values;
// the odd ranks by majority, or every rank that disagrees where there is none (2 ranks).
//
// And the gradient norm clip_grad_norm_ returned (`clip.total_norm`, since trace 2.4), which no
// replica digest sees where the model is sharded: torch.nn.utils.clip_grad_norm_ over an FSDP
// model's local shards clips each shard by its own norm. It is compared exactly, and only among
// the unit's ranks that recorded the same parameter names (one model, replicated or sharded; the
// probe records no norm for pipeline stages) and whose replicated gradients agree (where they do
// not, synced_grads names the gradients and the norms differ as their consequence).
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class OptimizerSettingsChecker : public Checker {
 public:
  std::string_view name() const override { return "optimizer_settings"; }
  // It reads StepRecord::optimizer, which a streamed trace's folded steps drop as they drop
  // tensors: it judges step by step.
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;
};

// "opt0.group1.lr" -> "lr of optimizer 0, param group 1"; "clip.max_norm" -> "clip_grad_norm_'s
// max_norm"; any other name as it is.
std::string DescribeOptimizerSetting(const std::string& setting);

}  // namespace lockstep
