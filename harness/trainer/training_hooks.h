// Named places in the trainer where fault injections act (docs/SCENARIOS.md#inject). The trainer
// holds a TrainingHooks* that is null when a scenario injects nothing, so each hook point costs
// one branch. Every default here is "behave correctly".
//
// Injections keep the collective sequence aligned unless the bug they model is exactly a
// misaligned sequence (extra_collective, hang): a rank that "skips" a sync still takes part in the
// collective and then ignores its result, as the real bugs did (the wrapper was bypassed, the
// result was not copied back), so the other ranks do not hang and the desync is what is observed.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "harness/comm/collective_interceptor.h"

namespace torch::nn {
class Module;
}

namespace lockstep {

class TrainingHooks : public CollectiveInterceptor {
 public:
  virtual ~TrainingHooks() = default;

  // --- initialization (step 0)
  // Added to the model seed on this rank (no_initial_broadcast makes init rank-dependent).
  virtual uint64_t InitSeedOffset() { return 0; }
  virtual bool SkipInitialBroadcast() { return false; }

  // --- every optimizer step (1-based)
  virtual void OnStepBegin(int64_t /*step*/) {}
  // Inside every attention forward (double_discovery acts here).
  virtual void OnAttentionForward() {}
  // Whether micro-step `micro` (0-based) of `grad_accum` is the one that syncs gradients.
  virtual bool SyncOnMicroStep(int64_t /*step*/, int micro, int grad_accum) { return micro == grad_accum - 1; }
  // Before each collective: the wrapper calls this; a hang injection never returns.
  bool BeforeCollective(const CollectiveFingerprint& /*fp*/, int64_t /*step*/) override { return true; }
  // After the gradient sync of a step: issue an extra collective on this rank?
  virtual bool ExtraCollective(int64_t /*step*/) { return false; }
  // The synced gradient this rank applies.
  virtual bool KeepLocalGradients(int64_t /*step*/) { return false; }     // skip_grad_allreduce
  virtual bool UseStaleGradients(int64_t /*step*/) { return false; }      // stale_grad
  virtual bool ScaleByLocalCount(int64_t /*step*/) { return false; }      // wrong_grad_scale
  virtual bool ReorderedReduction(int64_t /*step*/) { return false; }     // nondeterministic_reduce
  virtual bool SkipGradClip(int64_t /*step*/) { return false; }
  virtual int64_t LearningRateStepOffset(int64_t /*step*/) { return 0; }  // lr_mismatch
  // zero1: take part in the post-step parameter all-gather but keep the stale parameters.
  virtual bool DiscardParamAllGather(int64_t /*step*/) { return false; }
  // Take part in the buffer sync but keep the local buffers (unsynced_buffers).
  virtual bool DiscardBufferSync(int64_t /*step*/) { return false; }
  // After the optimizer step, before the step's state is recorded (bitflip acts here).
  virtual void OnAfterOptimizerStep(int64_t /*step*/, torch::nn::Module& /*model*/) {}
};

}  // namespace lockstep
