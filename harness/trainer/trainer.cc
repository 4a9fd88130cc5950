#include "harness/trainer/trainer.h"

#include <atomic>
#include <cmath>

#include "harness/trainer/optimizer_factory.h"
#include "harness/trainer/parallel/ddp_gradient_sync.h"
#include "harness/trainer/parallel/zero1_optimizer.h"
#include "harness/trainer/synthetic_data.h"
#include "harness/trainer/training_hooks.h"

namespace lockstep {

namespace {

// Epochs are never reused, across trainers too (a recorder may see two in one process: tests).
uint64_t NewStateEpoch() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

Trainer::Trainer(const Scenario& scenario, ProcessGroups groups, torch::Device device, TrainingHooks* hooks)
    : scenario_(scenario), groups_(groups), device_(device), hooks_(hooks) {}

Trainer::~Trainer() = default;

Result<std::unique_ptr<Trainer>> Trainer::Create(const Scenario& scenario, ProcessGroups groups,
                                                 torch::Device device, TrainingHooks* hooks) {
  std::unique_ptr<Trainer> trainer(new Trainer(scenario, groups, device, hooks));
  try {
    const uint64_t seed = scenario.seed + (hooks ? hooks->InitSeedOffset() : 0);
    trainer->model_ = MakeModel(scenario.model, seed, device, hooks);
    for (const auto& item : trainer->model_->module().named_parameters()) {
      trainer->param_names_.push_back(item.key());
      trainer->params_.push_back(item.value());
    }
    for (const auto& item : trainer->model_->module().named_buffers()) {
      trainer->buffer_names_.push_back(item.key());
      trainer->buffers_.push_back(item.value());
    }
    // Dropout masks differ per rank, as they do in real data parallelism; the stream is seeded so
    // that a run repeats exactly.
    torch::manual_seed(scenario.seed * 1000003ULL + static_cast<uint64_t>(groups.world->rank()));
  } catch (const c10::Error& e) {
    return InternalError(std::string("building the model: ") + e.what_without_backtrace());
  }
  return trainer;
}

Status Trainer::Initialize() {
  try {
    torch::NoGradGuard no_grad;
    if (!(hooks_ && hooks_->SkipInitialBroadcast())) {
      std::vector<torch::Tensor> pieces;
      for (const auto& p : params_) pieces.push_back(p.detach().reshape({-1}));
      torch::Tensor flat = torch::cat(pieces);
      LOCKSTEP_RETURN_IF_ERROR(groups_.world->Broadcast(flat, 0));
      int64_t offset = 0;
      for (auto& p : params_) {
        p.copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));
        offset += p.numel();
      }
      for (auto& b : buffers_) {
        torch::Tensor copy = b.contiguous();
        LOCKSTEP_RETURN_IF_ERROR(groups_.world->Broadcast(copy, 0));
        b.copy_(copy);
      }
    }
    if (scenario_.parallel.mode == ParallelMode::kZero1) {
      zero1_ = std::make_unique<Zero1Optimizer>(params_, scenario_.optimizer, groups_, hooks_);
    } else {
      ddp_ = std::make_unique<DdpGradientSync>(params_, scenario_.parallel.bucket_mb, groups_, hooks_);
      optimizer_ = MakeOptimizer(scenario_.optimizer, params_);
    }
  } catch (const c10::Error& e) {
    return InternalError(std::string("initialization: ") + e.what_without_backtrace());
  }
  state_epoch_ = NewStateEpoch();
  last_epoch_ = 0;
  return Status::Ok();
}

Result<StepStats> Trainer::Step(int64_t step) {
  StepStats stats;
  state_epoch_ = NewStateEpoch();  // nobody vouches for a step in progress, or one that failed
  const uint64_t last_epoch = last_epoch_;
  last_epoch_ = 0;  // nor for the step after one that failed
  try {
    if (hooks_) hooks_->OnStepBegin(step);
    const int accum = scenario_.parallel.grad_accum;
    const int64_t lr_step = step + (hooks_ ? hooks_->LearningRateStepOffset(step) : 0);
    stats.lr = LearningRate(scenario_.optimizer, lr_step);
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
    clipped_ = false;
    model_->module().train();

    double loss_sum = 0.0;
    const int pieces = data_split_;
    for (int micro = 0; micro < accum; ++micro) {
      for (int piece = 0; piece < pieces; ++piece) {
        Batch batch = pieces > 1 ? MakeBatch(scenario_.model, scenario_.seed, scenario_.data.batch_per_rank, accum,
                                             step, micro, piece, pieces, device_)
                                 : MakeBatch(scenario_.model, scenario_.seed, scenario_.data.batch_per_rank, accum,
                                             step, micro, groups_.world->rank(), groups_.world->size(), device_);
        const bool last_piece = piece == pieces - 1;
        const bool sync =
            ddp_ && last_piece && (hooks_ ? hooks_->SyncOnMicroStep(step, micro, accum) : micro == accum - 1);
        if (sync) ddp_->Arm(step);
        torch::Tensor loss = model_->Loss(batch);
        loss_sum += loss.item<double>();
        const int parts = accum * pieces;
        (parts > 1 ? loss / static_cast<double>(parts) : loss).backward();
        if (sync) LOCKSTEP_RETURN_IF_ERROR(ddp_->Finish().WithContext("step " + std::to_string(step)));
      }
    }
    stats.loss = loss_sum / (accum * pieces);

    if (hooks_ && hooks_->ExtraCollective(step)) {
      // Rank-dependent logging that issues a collective the other ranks do not (Lightning#19106).
      LOCKSTEP_RETURN_IF_ERROR(groups_.world->Barrier());
    }

    torch::NoGradGuard no_grad;
    bool made = false;  // a tensor of the state made anew this step
    if (zero1_) {
      LOCKSTEP_RETURN_IF_ERROR(zero1_->Step(step, stats.lr, &stats.grad_norm));
    } else {
      double sq = 0.0;
      for (const auto& p : params_) sq += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
      stats.grad_norm = std::sqrt(sq);
      const double max_norm = scenario_.optimizer.clip_grad_norm;
      if (max_norm > 0 && !(hooks_ && hooks_->SkipGradClip(step))) {
        const double coef = max_norm / (stats.grad_norm + 1e-6);
        if (coef < 1.0) {
          // Record the synced gradient, not the clipped one: a rank that clips differently then
          // shows as "update diverged", not as "gradient not reduced".
          synced_grads_.resize(params_.size());
          for (size_t i = 0; i < params_.size(); ++i) {
            const torch::Tensor& g = params_[i].grad();
            torch::Tensor& copy = synced_grads_[i];
            if (copy.defined() && copy.sizes() == g.sizes() && copy.scalar_type() == g.scalar_type()) {
              copy.copy_(g);
            } else {
              copy = g.clone();
              made = true;
            }
            g.mul_(coef);
          }
          clipped_ = true;
        }
      }
      SetLearningRate(*optimizer_, stats.lr);
      optimizer_->step();
    }
    LOCKSTEP_RETURN_IF_ERROR(SyncBuffers(step));
    if (hooks_) hooks_->OnAfterOptimizerStep(step, model_->module());

    // The same tensors as at the end of the last step: the same epoch (StateEpoch).
    const size_t state_count = zero1_ ? zero1_->StateCount() : optimizer_ ? optimizer_->state().size() : 0;
    const bool kept_gradients = zero1_ || (ddp_ && ddp_->KeptGradients(step));
    const bool same = last_epoch != 0 && !made && kept_gradients && clipped_ == last_clipped_ &&
                      state_count == last_state_count_;
    if (same) state_epoch_ = last_epoch;
    last_epoch_ = state_epoch_;
    last_clipped_ = clipped_;
    last_state_count_ = state_count;
  } catch (const c10::Error& e) {
    return InternalError("step " + std::to_string(step) + ": " + e.what_without_backtrace());
  }
  return stats;
}

// Buffers (BatchNorm running statistics) are updated by every rank's own forward; DDP's
// broadcast_buffers re-syncs them from rank 0. The reference trainer does it after the step, so
// the recorded state is the synced one.
Status Trainer::SyncBuffers(int64_t step) {
  const bool discard = hooks_ && hooks_->DiscardBufferSync(step);
  for (auto& b : buffers_) {
    torch::Tensor copy = b.contiguous().clone();
    LOCKSTEP_RETURN_IF_ERROR(groups_.world->Broadcast(copy, 0));
    if (!discard) b.copy_(copy);
  }
  return Status::Ok();
}

void Trainer::VisitState(const TensorVisitor& visit) {
  for (size_t i = 0; i < params_.size(); ++i) visit(param_names_[i], TensorKind::kParam, params_[i], true);
  for (size_t i = 0; i < buffers_.size(); ++i) visit(buffer_names_[i], TensorKind::kBuffer, buffers_[i], true);
  if (zero1_) {
    if (zero1_->grad_shard().defined()) {
      visit("zero1.grad_shard" + std::to_string(zero1_->shard_index()), TensorKind::kGrad, zero1_->grad_shard(), false);
    }
    zero1_->VisitShardState([&](const std::string& name, const torch::Tensor& t) {
      visit("zero1.shard" + std::to_string(zero1_->shard_index()) + "#" + name, TensorKind::kOptimizerState, t, false);
    });
    return;
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& g = clipped_ ? synced_grads_[i] : params_[i].grad();
    if (g.defined()) visit(param_names_[i], TensorKind::kGrad, g, true);
  }
  if (optimizer_) {
    // One string for every state tensor's name: a step records this every step, and a name built
    // anew per tensor (too long to be stored inline) was an allocation and a free each (issue 38).
    // Visitors copy what they keep.
    std::string state_name;
    for (size_t i = 0; i < params_.size(); ++i) {
      VisitOptimizerState(*optimizer_, params_[i], [&](const std::string& name, const torch::Tensor& t) {
        state_name.assign(param_names_[i]).append(1, '#').append(name);
        visit(state_name, TensorKind::kOptimizerState, t, true);
      });
    }
  }
}

}  // namespace lockstep
