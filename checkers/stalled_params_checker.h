// stalled_params: training that changes nothing. A rank's step is stalled when an optimizer step
// ran (the record exists: the probe writes one after each optimizer step, lockstep-rank after
// each of its steps) with a positive learning rate, and not one parameter of the record changed
// since the rank's previous record although the step should have moved some:
//   - with gradients: a parameter had a finite, non-zero gradient large enough that plain SGD's
//     update, lr x |grad|, is at least one rounding unit of the parameter (eps of its dtype x
//     |param|), so it cannot round away entirely;
//   - without gradients: a loss was backpropagated, yet not one of the optimizer's parameters had
//     a gradient (torch's optimizers skip a parameter without one): the optimizer holds tensors
//     the backward pass never reaches, as one built before the model was wrapped or sharded does
//     (FSDP's flat parameter, `fully_shard`'s DTensors replace the ones it holds).
// Reported when a rank stalls two records running (one step that moves nothing can be a
// program's deliberate skip), at the first of them, for every rank that stalled; every rank
// agrees in the real bug, so this is no cross-rank comparison.
//
// Why the whole record, never one parameter: a parameter may rightly stay put while others train
// (its group's lr is 0 while the record's lr is the first group's, a bf16 update that rounds away,
// a sharded optimizer's step another rank owns), so only a step that moved nothing at all is
// judged. Not judged: step 0, the first record of a rank with gradients (nothing to compare it
// with), a record whose lr is not above 0 (a warmup step, or an lr the probe could not read), a
// record with a gradient that is not finite (a GradScaler or fused optimizer skips such a step),
// a step whose gradients are all zero, and parameters whose record is new or changed shape.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class StalledParamsChecker : public Checker {
 public:
  std::string_view name() const override { return "stalled_params"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;
};

}  // namespace lockstep
