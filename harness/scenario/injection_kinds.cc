#include "harness/scenario/injection_kinds.h"

namespace lockstep {

const InjectionKindInfo* FindInjectionKind(std::string_view name) {
  for (const InjectionKindInfo& info : kInjectionKinds) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::string_view RequirementText(InjectionRequirement requirement) {
  switch (requirement) {
    case InjectionRequirement::kNone: return "";
    case InjectionRequirement::kGradAccum: return "parallel.grad_accum > 1";
    case InjectionRequirement::kZero1: return "parallel.mode: zero1";
    case InjectionRequirement::kBatchNorm: return "model.norm: batchnorm";
    case InjectionRequirement::kGradClip: return "optimizer.clip_grad_norm > 0";
    case InjectionRequirement::kTransformer: return "model.kind: transformer";
    case InjectionRequirement::kOnsetStepZero: return "step: 0";
  }
  return "";
}

}  // namespace lockstep
