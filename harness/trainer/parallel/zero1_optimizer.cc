#include "harness/trainer/parallel/zero1_optimizer.h"

#include <cmath>

#include "harness/trainer/optimizer_factory.h"
#include "harness/trainer/training_hooks.h"

namespace lockstep {
namespace {

torch::Tensor Flatten(const std::vector<torch::Tensor>& tensors, bool grads) {
  std::vector<torch::Tensor> pieces;
  pieces.reserve(tensors.size());
  for (const auto& t : tensors) {
    torch::Tensor v = grads ? (t.grad().defined() ? t.grad() : torch::zeros_like(t)) : t;
    pieces.push_back(v.detach().reshape({-1}));
  }
  return torch::cat(pieces);
}

}  // namespace

Zero1Optimizer::Zero1Optimizer(std::vector<torch::Tensor> params, const OptimizerSpec& spec,
                               ProcessGroups groups, TrainingHooks* hooks)
    : params_(std::move(params)), spec_(spec), groups_(groups), hooks_(hooks) {
  torch::NoGradGuard no_grad;
  torch::Tensor flat = PadToMultiple(Flatten(params_, /*grads=*/false), groups_.shard_multiple());
  total_ = flat.numel();
  shard_size_ = total_ / groups_.slice->size();
  shard_index_ = groups_.slice->rank();
  master_shard_ = flat.narrow(0, shard_index_ * shard_size_, shard_size_).clone().set_requires_grad(true);
  grad_shard_ = torch::zeros({shard_size_}, flat.options());
  optimizer_ = MakeOptimizer(spec_, {master_shard_});
}

Status Zero1Optimizer::Step(int64_t step, double lr, double* grad_norm) {
  torch::NoGradGuard no_grad;
  torch::Tensor flat_grad = PadToMultiple(Flatten(params_, /*grads=*/true), groups_.shard_multiple());
  LOCKSTEP_RETURN_IF_ERROR(groups_.slice->ReduceScatter(flat_grad, grad_shard_, ReduceOp::kSum));
  if (groups_.hierarchical()) LOCKSTEP_RETURN_IF_ERROR(groups_.cross->AllReduce(grad_shard_, ReduceOp::kSum));
  // Injections act on this rank's shard only: the all-gather below then hands the wrong update
  // to every replica, which all stay identical (only `reference` can see it).
  if (hooks_ && hooks_->KeepLocalGradients(step)) {
    // skip_grad_allreduce: took part in the reduce-scatter, then used its own local gradient.
    // Into the same tensor: the state the trainer lists stays the same tensors (Trainer::StateEpoch).
    grad_shard_.copy_(flat_grad.narrow(0, shard_index_ * shard_size_, shard_size_));
  } else if (!(hooks_ && hooks_->ScaleByLocalCount(step))) {  // wrong_grad_scale: divisor 1
    grad_shard_.div_(static_cast<double>(groups_.world->size()));
  }
  // stale_grad: the ZeRO double-buffer race (DeepSpeed#7188): the optimizer reads the reduction
  // buffer of the previous step, whose new contents have not landed yet.
  if (hooks_) {
    torch::Tensor fresh = grad_shard_.clone();
    if (hooks_->UseStaleGradients(step) && previous_grad_shard_.defined()) grad_shard_.copy_(previous_grad_shard_);
    previous_grad_shard_ = fresh;
  }

  // Global norm: the shards of one slice tile the whole gradient.
  torch::Tensor sq = grad_shard_.to(torch::kFloat64).pow(2).sum().reshape({1});
  LOCKSTEP_RETURN_IF_ERROR(groups_.slice->AllReduce(sq, ReduceOp::kSum));
  const double norm = std::sqrt(sq.item<double>());
  *grad_norm = norm;
  if (spec_.clip_grad_norm > 0 && !(hooks_ && hooks_->SkipGradClip(step))) {
    const double coef = spec_.clip_grad_norm / (norm + 1e-6);
    if (coef < 1.0) grad_shard_.mul_(coef);
  }

  master_shard_.mutable_grad() = grad_shard_.clone();
  SetLearningRate(*optimizer_, lr);
  optimizer_->step();

  torch::Tensor gathered = torch::empty({total_}, master_shard_.options().requires_grad(false));
  LOCKSTEP_RETURN_IF_ERROR(groups_.slice->AllGather(master_shard_.detach(), gathered));
  if (hooks_ && hooks_->DiscardParamAllGather(step)) return Status::Ok();
  int64_t offset = 0;
  for (auto& p : params_) {
    const int64_t n = p.numel();
    p.copy_(gathered.narrow(0, offset, n).view(p.sizes()));
    offset += n;
  }
  return Status::Ok();
}

void Zero1Optimizer::VisitShardState(
    const std::function<void(const std::string&, const torch::Tensor&)>& visit) {
  VisitOptimizerState(*optimizer_, master_shard_, visit);
}

}  // namespace lockstep
