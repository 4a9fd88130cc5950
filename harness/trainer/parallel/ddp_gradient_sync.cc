#include "harness/trainer/parallel/ddp_gradient_sync.h"

#include "harness/trainer/training_hooks.h"

namespace lockstep {

DdpGradientSync::DdpGradientSync(std::vector<torch::Tensor> params, double bucket_mb,
                                 ProcessGroups groups, TrainingHooks* hooks)
    : params_(std::move(params)), groups_(groups), hooks_(hooks) {
  std::vector<int64_t> numel;
  for (const auto& p : params_) numel.push_back(p.numel());
  buckets_ = AssignBuckets(numel, static_cast<int64_t>(params_.empty() ? 4 : params_[0].element_size()), bucket_mb);
  bucket_of_param_.assign(params_.size(), -1);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (int i : buckets_[b].params) bucket_of_param_[i] = static_cast<int>(b);
  }
  staged_.resize(params_.size());
  synced_.resize(params_.size());
  previous_.resize(params_.size());
  grads_.resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const int index = static_cast<int>(i);
    params_[i].register_hook([this, index](torch::Tensor grad) { return OnGradient(index, grad); });
  }
}

void DdpGradientSync::Arm(int64_t step) {
  armed_ = true;
  step_ = step;
  status_ = Status::Ok();
  next_bucket_ = 0;
  ready_in_bucket_.assign(buckets_.size(), 0);
  for (auto& t : staged_) t = torch::Tensor();
  for (auto& t : synced_) t = torch::Tensor();
}

torch::Tensor DdpGradientSync::OnGradient(int index, const torch::Tensor& grad) {
  if (!armed_) return grad;
  // The hook sees the gradient before AccumulateGrad adds it to .grad: the value that .grad will
  // hold is the earlier accumulation (no_sync micro-steps) plus this one.
  const torch::Tensor& existing = params_[index].grad();
  torch::NoGradGuard no_grad;
  staged_[index] = existing.defined() ? existing + grad : grad.clone();
  ++ready_in_bucket_[bucket_of_param_[index]];
  LaunchReadyBuckets();
  return grad;
}

void DdpGradientSync::LaunchReadyBuckets() {
  while (next_bucket_ < static_cast<int>(buckets_.size()) &&
         ready_in_bucket_[next_bucket_] == static_cast<int>(buckets_[next_bucket_].params.size())) {
    LaunchBucket(next_bucket_++);
  }
}

void DdpGradientSync::LaunchBucket(int bucket) {
  if (!status_.ok()) return;  // a collective already failed: the step's result is void anyway
  torch::NoGradGuard no_grad;
  const auto& members = buckets_[bucket].params;
  std::vector<torch::Tensor> pieces;
  pieces.reserve(members.size());
  for (int i : members) {
    torch::Tensor g = staged_[i];
    if (!g.defined()) g = params_[i].grad().defined() ? params_[i].grad() : torch::zeros_like(params_[i]);
    pieces.push_back(g.reshape({-1}));
  }
  torch::Tensor local = torch::cat(pieces);
  torch::Tensor flat = PadToMultiple(local, groups_.shard_multiple());
  const bool keep_local = hooks_ && hooks_->KeepLocalGradients(step_);
  const bool reorder = hooks_ && hooks_->ReorderedReduction(step_);
  torch::Tensor local_copy = (keep_local || reorder) ? flat.clone() : torch::Tensor();
  status_ = AllReduceSum(groups_, flat);
  if (!status_.ok()) return;

  const double world = static_cast<double>(groups_.world->size());
  if (keep_local) {
    flat = local_copy;  // took part in the all-reduce, then used the local gradient
  } else if (hooks_ && hooks_->ScaleByLocalCount(step_)) {
    // averaged by the local replica count (1) instead of the world size
  } else if (reorder) {
    // Same sum, combined in another order on this rank: (sum - mine) + mine. Differs from the
    // others only by rounding.
    flat = ((flat - local_copy) + local_copy).div_(world);
  } else {
    flat.div_(world);
  }

  int64_t offset = 0;
  for (int i : members) {
    const int64_t n = params_[i].numel();
    synced_[i] = flat.narrow(0, offset, n).view(params_[i].sizes());
    offset += n;
  }
}

Status DdpGradientSync::Finish() {
  while (next_bucket_ < static_cast<int>(buckets_.size())) LaunchBucket(next_bucket_++);
  armed_ = false;
  if (!status_.ok()) return status_;
  const bool stale = hooks_ && hooks_->UseStaleGradients(step_);
  bool made = false;
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor g = synced_[i];
    if (stale && previous_[i].defined()) g = previous_[i];  // the last step's buffer, re-applied
    torch::Tensor& kept = grads_[i];
    if (kept.defined() && kept.sizes() == g.sizes() && kept.scalar_type() == g.scalar_type() &&
        kept.device() == g.device()) {
      kept.copy_(g);
    } else {
      kept = g.clone();
      made = true;
    }
    params_[i].mutable_grad() = kept;
    previous_[i] = synced_[i];
  }
  kept_step_ = made ? -1 : step_;
  return Status::Ok();
}

}  // namespace lockstep
