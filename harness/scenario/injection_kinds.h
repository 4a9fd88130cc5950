// The fault-injection kinds a scenario's `inject:` may name, each with the public bug class it
// models. The one list: validation, docs/SCENARIOS.md (checked by a test) and the injection
// code all take the names from here.
#pragma once

#include <array>
#include <string_view>

namespace lockstep {

// What a scenario must contain for an injection of this kind to have anything to act on; a
// scenario that lacks it could never show the bug, so validation rejects it.
enum class InjectionRequirement {
  kNone,
  kGradAccum,      // parallel.grad_accum > 1
  kZero1,          // parallel.mode: zero1
  kBatchNorm,      // model.norm: batchnorm (running statistics exist)
  kGradClip,       // optimizer.clip_grad_norm > 0
  kTransformer,    // model.kind: transformer (an attention forward exists)
  kOnsetStepZero,  // step: 0 (acts at initialization)
};

struct InjectionKindInfo {
  std::string_view name;
  std::string_view effect;  // what the injection does
  std::string_view models;  // the public bug (class) it reproduces
  InjectionRequirement requirement;
};

inline constexpr std::array<InjectionKindInfo, 15> kInjectionKinds = {{
    {"skip_grad_allreduce", "the rank skips the gradient all-reduce",
     "a DDP wrapper bypassed, or the model moved after wrapping (pytorch/pytorch#104336)",
     InjectionRequirement::kNone},
    {"no_sync_off_by_one", "with gradient accumulation the rank syncs on the wrong micro-step",
     "an off-by-one in the no_sync accumulation window (FunASR PR 3472)", InjectionRequirement::kGradAccum},
    {"skip_param_allgather", "zero1 skips the post-optimizer parameter all-gather on the rank",
     "weights diverging after updates because only gradients were synchronized (pytorch/xla#8396)",
     InjectionRequirement::kZero1},
    {"no_initial_broadcast", "rank-dependent initialization and no start-of-run broadcast",
     "replicas starting from different weights (pytorch/xla#3216)", InjectionRequirement::kOnsetStepZero},
    {"unsynced_buffers", "BatchNorm running statistics are never synchronized",
     "DDP with broadcast_buffers=False", InjectionRequirement::kBatchNorm},
    {"skip_grad_clip", "the rank skips gradient clipping",
     "replicated LayerNorm weights drifting apart in BLOOM training (DeepSpeed PR 1801)",
     InjectionRequirement::kGradClip},
    {"wrong_grad_scale", "the rank averages gradients by its local count instead of the world size",
     "a gradient averaged with the wrong divisor on one rank", InjectionRequirement::kNone},
    {"stale_grad", "the rank applies the previous step's reduced gradient",
     "a double-buffer race in gradient reduction (DeepSpeed#7188)", InjectionRequirement::kNone},
    {"extra_collective", "the rank issues an extra or a different collective",
     "rank-dependent logging that runs a collective on one rank only (Lightning#19106)",
     InjectionRequirement::kNone},
    {"double_discovery", "the attention forward runs device discovery again",
     "tracing flash attention re-ran device discovery in multi-slice training (pytorch/xla#8812, #8954)",
     InjectionRequirement::kTransformer},
    {"bitflip", "one bit of one weight flips on the rank", "silent data corruption",
     InjectionRequirement::kNone},
    {"lr_mismatch", "the rank's learning-rate schedule runs one step off",
     "a scheduler stepped a different number of times on one rank", InjectionRequirement::kNone},
    {"nondeterministic_reduce", "the rank sums its local partial sums in a different order",
     "rounding-level drift from a non-deterministic reduction order", InjectionRequirement::kNone},
    {"hang", "the rank blocks forever before its next collective",
     "a rank stuck outside a collective the others wait in", InjectionRequirement::kNone},
    {"crash", "the rank exits, or raises SIGSEGV", "a rank dying mid-training", InjectionRequirement::kNone},
}};

// The entry for `name`, or nullptr when no kind has that name.
const InjectionKindInfo* FindInjectionKind(std::string_view name);

// "parallel.grad_accum > 1" and so on: the requirement as docs and diagnostics phrase it; empty
// for kNone.
std::string_view RequirementText(InjectionRequirement requirement);

}  // namespace lockstep
