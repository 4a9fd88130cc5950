// Named places in the trainer where fault injections act (docs/SCENARIOS.md#inject). The trainer
// holds a TrainingHooks* that is null when a scenario injects nothing, so each hook point costs
// one branch.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

namespace lockstep {

struct CollectiveFingerprint;

class TrainingHooks {
 public:
  virtual ~TrainingHooks() = default;
  // Before each optimizer step's first micro-step: the step number (1-based).
  virtual void OnStepBegin(int64_t /*step*/) {}
  // After the initial broadcast at step 0 (no_initial_broadcast acts here).
  virtual bool SkipInitialBroadcast() { return false; }
  // Inside every attention forward (double_discovery acts here).
  virtual void OnAttentionForward() {}
  // After backward, before any gradient sync, for each micro-step.
  virtual void OnAfterBackward(int64_t /*step*/, int /*micro_step*/) {}
  // Before each collective: return false to skip it on this rank.
  virtual bool BeforeCollective(const CollectiveFingerprint& /*fp*/, int64_t /*step*/) { return true; }
  // After the optimizer step, before the step's state is recorded.
  virtual void OnAfterOptimizerStep(int64_t /*step*/) {}
};

}  // namespace lockstep
