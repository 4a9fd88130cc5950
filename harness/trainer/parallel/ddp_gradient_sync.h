// DDP's gradient all-reduce: per-parameter autograd hooks mark gradients ready as backward
// proceeds; a bucket is all-reduced as soon as it and every bucket before it are ready (so every
// rank issues the same collectives in the same order), and the averaged gradients are written to
// .grad when backward ends. Only the micro-step that syncs is armed (no_sync semantics).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "harness/core/status.h"
#include "harness/trainer/parallel/gradient_buckets.h"
#include "harness/trainer/parallel/process_groups.h"

namespace lockstep {

class TrainingHooks;

class DdpGradientSync {
 public:
  // Registers hooks on `params`; they must outlive this object.
  DdpGradientSync(std::vector<torch::Tensor> params, double bucket_mb, ProcessGroups groups,
                  TrainingHooks* hooks);
  DdpGradientSync(const DdpGradientSync&) = delete;
  DdpGradientSync& operator=(const DdpGradientSync&) = delete;

  // Arms the hooks for the coming backward of `step`.
  void Arm(int64_t step);
  // After backward: reduces the buckets not yet launched (parameters that got no gradient count
  // as zeros) and writes the synced gradients into .grad. Returns the first collective error.
  // The .grad tensors are this object's own, kept from step to step and overwritten (as DDP's
  // gradient_as_bucket_view keeps them in its buckets), not new ones each step.
  Status Finish();
  // Whether step `step`'s Finish() wrote every gradient into the tensor it wrote the last step's
  // into (none had to be made anew): the state a capture lists is then the same tensors
  // (Trainer::StateEpoch).
  bool KeptGradients(int64_t step) const { return kept_step_ == step; }

  const std::vector<GradientBucket>& buckets() const { return buckets_; }

 private:
  torch::Tensor OnGradient(int index, const torch::Tensor& grad);
  void LaunchReadyBuckets();
  void LaunchBucket(int bucket);

  std::vector<torch::Tensor> params_;
  std::vector<GradientBucket> buckets_;
  std::vector<int> bucket_of_param_;
  ProcessGroups groups_;
  TrainingHooks* hooks_;

  bool armed_ = false;
  int64_t step_ = 0;
  std::vector<torch::Tensor> staged_;        // accumulated local gradient per parameter
  std::vector<torch::Tensor> synced_;        // averaged gradient per parameter
  std::vector<torch::Tensor> previous_;      // last step's synced gradients (stale_grad)
  std::vector<torch::Tensor> grads_;         // the parameters' .grad, kept and overwritten each step
  int64_t kept_step_ = -1;                   // the last step whose Finish() made no gradient anew
  std::vector<int> ready_in_bucket_;
  int next_bucket_ = 0;
  Status status_;
};

}  // namespace lockstep
