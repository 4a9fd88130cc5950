// grad_presence: which sharded parameters received a gradient in a step, compared across the
// ranks that hold them. A parameter whose values are sharded (FSDP's shards, FSDP2's DTensors, a
// tensor-parallel shard: recorded not replicated, or compared only within a replica group smaller
// than the world) is never compared by value with all the ranks that train it, so a rank whose
// shard got no gradient while its peers' shards did is invisible to the replica checkers. Yet
// whether a parameter received a gradient is the same on every rank of a correct SPMD step even
// when the values are sharded: each rank holds a piece of the same parameter and takes part in
// the same reduce-scatter. The motivating bug: under FSDP2 a branch chosen per rank between
// same-sized layers; rank 0 reduce-scatters one layer's gradient while rank 1 reduce-scatters
// the other's, the identical shapes pair up silently, and each branch's shard has a gradient on
// one rank only.
//
// Judged per step, from the records alone (no trace field of its own): for each parameter in
// scope, the ranks whose record holds a non-empty piece of it (numel > 0: FSDP1's
// use_orig_params leaves a rank's view of a parameter outside its shard empty, and it can hold no
// gradient) and recorded at least one gradient that step (a rank that recorded none says nothing
// about presence) split into those with its gradient and those without; both non-empty is a
// finding. Parameters replicated on every rank are synced_grads' (a missing gradient there is
// "missing"), and left out here: a hand-written sharded optimizer rightly keeps gradients for its
// own share of such parameters only. Ranks are matched by the parameter's name.
//
// One finding, at the first step that disagrees (the onset), naming the parameters that disagree
// there and the ranks where they had no gradient; later disagreeing steps are counted in details.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class GradPresenceChecker : public Checker {
 public:
  std::string_view name() const override { return "grad_presence"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;
};

}  // namespace lockstep
