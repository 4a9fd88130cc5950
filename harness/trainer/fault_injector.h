// Turns a scenario's `inject:` entries into behaviour at the trainer's hook points, for one rank.
// Built only when a scenario injects something; otherwise the trainer runs with null hooks.
// The kinds, their onset semantics and the public bugs they model: docs/SCENARIOS.md#inject.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/status.h"
#include "harness/scenario/scenario.h"
#include "harness/trainer/training_hooks.h"

namespace lockstep {

class FaultInjector : public TrainingHooks {
 public:
  // `rediscover(phase, step)` runs device discovery again (double_discovery).
  FaultInjector(const Scenario& scenario, int rank,
                std::function<void(const std::string&, int64_t)> rediscover);

  // Refuses, before the first step, an injection whose target the model does not have (a
  // bitflip `tensor` glob that matches no float32 parameter, or an `index` beyond every one it
  // matches): it would run as a silent no-op. The error names the entry's file:line:col.
  Status CheckTargets(torch::nn::Module& model) const;

  uint64_t InitSeedOffset() override;
  bool SkipInitialBroadcast() override;
  void OnStepBegin(int64_t step) override;
  void OnAttentionForward() override;
  bool SyncOnMicroStep(int64_t step, int micro, int grad_accum) override;
  bool BeforeCollective(const CollectiveFingerprint& fp, int64_t step) override;
  bool ExtraCollective(int64_t step) override;
  bool KeepLocalGradients(int64_t step) override;
  bool UseStaleGradients(int64_t step) override;
  bool ScaleByLocalCount(int64_t step) override;
  bool ReorderedReduction(int64_t step) override;
  bool SkipGradClip(int64_t step) override;
  int64_t LearningRateStepOffset(int64_t step) override;
  bool DiscardParamAllGather(int64_t step) override;
  bool DiscardBufferSync(int64_t step) override;
  void OnAfterOptimizerStep(int64_t step, torch::nn::Module& model) override;

 private:
  // The injection of `kind` acting on this rank from its onset on (persistent bugs), or null.
  const Injection* From(std::string_view kind, int64_t step) const;
  // ... acting on this rank exactly at its onset step (one-off events), or null.
  const Injection* At(std::string_view kind, int64_t step) const;
  bool AnyRank(std::string_view kind) const;

  std::vector<Injection> mine_;   // entries naming this rank
  std::vector<Injection> all_;    // every entry (some act on all ranks)
  int rank_;
  int64_t step_ = 0;
  bool rediscovered_ = false;
  std::function<void(const std::string&, int64_t)> rediscover_;
};

}  // namespace lockstep
