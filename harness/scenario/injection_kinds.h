// The fault-injection kinds a scenario's `inject:` may name, each with the public bug class it
// models, what it needs of the scenario and what it leaves that a check can see. The one list:
// validation and docs/SCENARIOS.md (checked by a test) take the names and rules from here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "harness/scenario/scenario.h"
#include "harness/scenario/symptom.h"

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
  // What it leaves in a run for a check to see (harness/scenario/symptom.h): under ddp, and under
  // zero1, where a corruption of the rank's own shard update is copied to every replica by the
  // all-gather, so the replicas agree and only a comparison with a clean run sees it.
  Symptoms symptoms;
  Symptoms zero1_symptoms;
};

namespace injection_symptoms {
using namespace symptom;
// A replica's weights, gradients and optimizer state differ, and the run drifts.
inline constexpr Symptoms kReplicaUpdate = kReplicaWeightsDiffer | kSyncedGradsDiffer | kOptimizerStateDiffers |
                                           kDriftFromCleanRun;
inline constexpr Symptoms kReplicaWeights = kReplicaWeightsDiffer | kDriftFromCleanRun;
}  // namespace injection_symptoms

// Each kind's name, written once: the table below, validation and the fault injector
// (harness/trainer/fault_injector.cc) use these; tests/layering/vocabulary_test.cc fails on a
// kind's name spelled as a string literal anywhere else.
namespace injection_kind {
inline constexpr std::string_view kSkipGradAllreduce = "skip_grad_allreduce";
inline constexpr std::string_view kNoSyncOffByOne = "no_sync_off_by_one";
inline constexpr std::string_view kSkipParamAllgather = "skip_param_allgather";
inline constexpr std::string_view kNoInitialBroadcast = "no_initial_broadcast";
inline constexpr std::string_view kUnsyncedBuffers = "unsynced_buffers";
inline constexpr std::string_view kSkipGradClip = "skip_grad_clip";
inline constexpr std::string_view kWrongGradScale = "wrong_grad_scale";
inline constexpr std::string_view kStaleGrad = "stale_grad";
inline constexpr std::string_view kExtraCollective = "extra_collective";
inline constexpr std::string_view kDoubleDiscovery = "double_discovery";
inline constexpr std::string_view kBitflip = "bitflip";
inline constexpr std::string_view kLrMismatch = "lr_mismatch";
inline constexpr std::string_view kNondeterministicReduce = "nondeterministic_reduce";
inline constexpr std::string_view kHang = "hang";
inline constexpr std::string_view kCrash = "crash";
}  // namespace injection_kind

// The parameters a kind takes (docs/SCENARIOS.md#injections), with their defaults where the
// injection reads them.
namespace injection_param {
inline constexpr std::string_view kBit = "bit";            // bitflip: the bit of a float32, 0 to 31
inline constexpr std::string_view kIndex = "index";        // bitflip: the element, >= 0
inline constexpr std::string_view kSignal = "signal";      // crash: SIGSEGV or SIGKILL
inline constexpr std::string_view kExitCode = "exit_code"; // crash: 1 to 255 but not lockstep's own 2, 3
inline constexpr int kDefaultBit = 22;                     // a high mantissa bit
inline constexpr int64_t kDefaultIndex = 0;
inline constexpr int kDefaultExitCode = 7;
}  // namespace injection_param

struct InjectionParamRule {
  std::string_view kind;
  std::string_view param;
  bool one_of;  // the kind takes one of these parameters, never both
};
inline constexpr std::array<InjectionParamRule, 4> kInjectionParams = {{
    {injection_kind::kBitflip, injection_param::kBit, false},
    {injection_kind::kBitflip, injection_param::kIndex, false},
    {injection_kind::kCrash, injection_param::kSignal, true},
    {injection_kind::kCrash, injection_param::kExitCode, true},
}};

// The signal a crash injection raises, by the names `signal` accepts; nullopt for any other.
std::optional<int> CrashSignal(std::string_view name);

inline constexpr std::array<InjectionKindInfo, 15> kInjectionKinds = {{
    {injection_kind::kSkipGradAllreduce, "the rank skips the gradient all-reduce",
     "a DDP wrapper bypassed, or the model moved after wrapping (pytorch/pytorch#104336)",
     InjectionRequirement::kNone,
     injection_symptoms::kReplicaUpdate,
     symptom::kDriftFromCleanRun},
    {injection_kind::kNoSyncOffByOne, "with gradient accumulation the rank syncs on the wrong micro-step",
     "an off-by-one in the no_sync accumulation window (FunASR PR 3472)", InjectionRequirement::kGradAccum,
     injection_symptoms::kReplicaUpdate,
     injection_symptoms::kReplicaUpdate},
    {injection_kind::kSkipParamAllgather, "zero1 skips the post-optimizer parameter all-gather on the rank",
     "weights diverging after updates because only gradients were synchronized (pytorch/xla#8396)",
     InjectionRequirement::kZero1,
     injection_symptoms::kReplicaWeights,
     injection_symptoms::kReplicaWeights},
    {injection_kind::kNoInitialBroadcast, "rank-dependent initialization and no start-of-run broadcast",
     "replicas starting from different weights (pytorch/xla#3216)", InjectionRequirement::kOnsetStepZero,
     injection_symptoms::kReplicaWeights,
     injection_symptoms::kReplicaWeights},
    {injection_kind::kUnsyncedBuffers, "BatchNorm running statistics are never synchronized",
     "DDP with broadcast_buffers=False", InjectionRequirement::kBatchNorm,
     symptom::kBuffersDiffer,
     symptom::kBuffersDiffer},
    {injection_kind::kSkipGradClip, "the rank skips gradient clipping",
     "replicated LayerNorm weights drifting apart in BLOOM training (DeepSpeed PR 1801)",
     InjectionRequirement::kGradClip,
     symptom::kReplicaWeightsDiffer | symptom::kOptimizerStateDiffers | symptom::kDriftFromCleanRun,
     symptom::kDriftFromCleanRun},
    {injection_kind::kWrongGradScale, "the rank averages gradients by its local count instead of the world size",
     "a gradient averaged with the wrong divisor on one rank", InjectionRequirement::kNone,
     injection_symptoms::kReplicaUpdate,
     symptom::kDriftFromCleanRun},
    {injection_kind::kStaleGrad, "the rank applies the previous step's reduced gradient",
     "a double-buffer race in gradient reduction (DeepSpeed#7188)", InjectionRequirement::kNone,
     injection_symptoms::kReplicaUpdate,
     symptom::kDriftFromCleanRun},
    {injection_kind::kExtraCollective, "the rank issues an extra or a different collective",
     "rank-dependent logging that runs a collective on one rank only (Lightning#19106)",
     InjectionRequirement::kNone,
     symptom::kCollectivesDiffer | symptom::kRankHangs,
     symptom::kCollectivesDiffer | symptom::kRankHangs},
    {injection_kind::kDoubleDiscovery, "the attention forward runs device discovery again",
     "tracing flash attention re-ran device discovery in multi-slice training (pytorch/xla#8812, #8954)",
     InjectionRequirement::kTransformer,
     symptom::kDiscoveryRepeated,
     symptom::kDiscoveryRepeated},
    {injection_kind::kBitflip, "one bit of one weight flips on the rank", "silent data corruption",
     InjectionRequirement::kNone,
     injection_symptoms::kReplicaWeights,
     injection_symptoms::kReplicaWeights},
    {injection_kind::kLrMismatch, "the rank's learning-rate schedule runs one step off",
     "a scheduler stepped a different number of times on one rank", InjectionRequirement::kNone,
     injection_symptoms::kReplicaWeights,
     symptom::kDriftFromCleanRun},
    {injection_kind::kNondeterministicReduce, "the rank sums its local partial sums in a different order",
     "rounding-level drift from a non-deterministic reduction order", InjectionRequirement::kNone,
     symptom::kReplicaWeightsDiffer | symptom::kSyncedGradsDiffer | symptom::kOptimizerStateDiffers,
     symptom::kReplicaWeightsDiffer | symptom::kSyncedGradsDiffer | symptom::kOptimizerStateDiffers},
    {injection_kind::kHang, "the rank blocks forever before its next collective",
     "a rank stuck outside a collective the others wait in", InjectionRequirement::kNone,
     symptom::kRankHangs,
     symptom::kRankHangs},
    {injection_kind::kCrash, "the rank exits, or raises SIGSEGV", "a rank dying mid-training", InjectionRequirement::kNone,
     symptom::kRankCrashes,
     symptom::kRankCrashes},
}};

// The entry for `name`, or nullptr when no kind has that name.
const InjectionKindInfo* FindInjectionKind(std::string_view name);

// What an injection of this kind leaves for a check to see in a scenario of `mode`.
Symptoms SymptomsIn(const InjectionKindInfo& kind, ParallelMode mode);

// "parallel.grad_accum > 1" and so on: the requirement as docs and diagnostics phrase it; empty
// for kNone.
std::string_view RequirementText(InjectionRequirement requirement);

}  // namespace lockstep
