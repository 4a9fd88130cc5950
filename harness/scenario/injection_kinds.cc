#include "harness/scenario/injection_kinds.h"

#include <csignal>

namespace lockstep {

const InjectionKindInfo* FindInjectionKind(std::string_view name) {
  for (const InjectionKindInfo& info : kInjectionKinds) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

Symptoms SymptomsIn(const InjectionKindInfo& kind, ParallelMode mode) {
  return mode == ParallelMode::kZero1 ? kind.zero1_symptoms : kind.symptoms;
}

std::optional<int> CrashSignal(std::string_view name) {
  if (name == "SIGSEGV" || name == "segv") return SIGSEGV;
  if (name == "SIGKILL" || name == "kill") return SIGKILL;
  return std::nullopt;
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
