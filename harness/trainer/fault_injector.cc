#include "harness/trainer/fault_injector.h"

#include <fnmatch.h>
#include <signal.h>
#include <unistd.h>

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace lockstep {
namespace {

std::string Param(const Injection& inj, const std::string& key, const std::string& fallback) {
  auto it = inj.params.find(key);
  return it == inj.params.end() ? fallback : it->second;
}

}  // namespace

FaultInjector::FaultInjector(const Scenario& scenario, int rank,
                             std::function<void(const std::string&, int64_t)> rediscover)
    : all_(scenario.inject), rank_(rank), rediscover_(std::move(rediscover)) {
  for (const auto& inj : all_) {
    if (std::find(inj.ranks.begin(), inj.ranks.end(), rank) != inj.ranks.end()) mine_.push_back(inj);
  }
}

const Injection* FaultInjector::From(const char* kind, int64_t step) const {
  for (const auto& inj : mine_) {
    if (inj.kind == kind && step >= inj.step) return &inj;
  }
  return nullptr;
}

const Injection* FaultInjector::At(const char* kind, int64_t step) const {
  for (const auto& inj : mine_) {
    if (inj.kind == kind && step == inj.step) return &inj;
  }
  return nullptr;
}

bool FaultInjector::AnyRank(const char* kind) const {
  return std::any_of(all_.begin(), all_.end(), [&](const Injection& i) { return i.kind == kind; });
}

Status FaultInjector::CheckTargets(torch::nn::Module& model) const {
  for (size_t i = 0; i < all_.size(); ++i) {
    const Injection& inj = all_[i];
    if (inj.kind != "bitflip") continue;
    const int64_t index = std::atoll(Param(inj, "index", "0").c_str());
    std::string largest;
    int64_t largest_numel = -1;
    for (const auto& item : model.named_parameters()) {
      if (!inj.tensor.empty() && fnmatch(inj.tensor.c_str(), item.key().c_str(), 0) != 0) continue;
      if (item.value().scalar_type() != torch::kFloat32) continue;
      if (item.value().numel() > largest_numel) {
        largest_numel = item.value().numel();
        largest = item.key();
      }
    }
    const SourceLocation& at = inj.location;
    const std::string where = at.file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                              ": inject[" + std::to_string(i) + "]: bitflip ";
    if (largest_numel < 0) {
      return InvalidArgumentError(where + "tensor \"" + inj.tensor + "\" matches no float32 parameter of the model");
    }
    if (index >= largest_numel) {
      return InvalidArgumentError(where + "index " + std::to_string(index) + " is beyond every tensor it may flip (" +
                                  (inj.tensor.empty() ? "" : "matching \"" + inj.tensor + "\"; ") + "the largest, " +
                                  largest + ", has " + std::to_string(largest_numel) + " elements)");
    }
  }
  return Status::Ok();
}

// no_initial_broadcast (pytorch/xla#3216): the named ranks initialize from another seed, and
// nobody broadcasts (a rank that skipped a broadcast the others make would hang them instead).
uint64_t FaultInjector::InitSeedOffset() { return From("no_initial_broadcast", 0) ? 7919ULL * (rank_ + 1) : 0; }
bool FaultInjector::SkipInitialBroadcast() { return AnyRank("no_initial_broadcast"); }

void FaultInjector::OnStepBegin(int64_t step) {
  step_ = step;
  if (const Injection* inj = At("crash", step)) {
    const std::string sig = Param(*inj, "signal", "");
    if (sig == "SIGSEGV" || sig == "segv") raise(SIGSEGV);
    if (sig == "SIGKILL" || sig == "kill") raise(SIGKILL);
    std::_Exit(std::atoi(Param(*inj, "exit_code", "7").c_str()));
  }
}

// double_discovery (pytorch/xla#8812, #8954): tracing the flash-attention forward ran device
// discovery a second time.
void FaultInjector::OnAttentionForward() {
  if (!rediscovered_ && At("double_discovery", step_)) {
    rediscovered_ = true;
    if (rediscover_) rediscover_("attention_forward", step_);
  }
}

// no_sync_off_by_one (FunASR PR 3472): the rank syncs one micro-step early, so its last
// micro-batch's gradient is added after the all-reduce, unsynced.
bool FaultInjector::SyncOnMicroStep(int64_t step, int micro, int grad_accum) {
  if (grad_accum > 1 && From("no_sync_off_by_one", step)) return micro == grad_accum - 2;
  return micro == grad_accum - 1;
}

// hang: the rank blocks forever before its next collective; the others wait in it.
bool FaultInjector::BeforeCollective(const CollectiveFingerprint& /*fp*/, int64_t step) {
  if (From("hang", step)) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(3600));
  }
  return true;
}

bool FaultInjector::ExtraCollective(int64_t step) { return At("extra_collective", step) != nullptr; }
bool FaultInjector::KeepLocalGradients(int64_t step) { return From("skip_grad_allreduce", step) != nullptr; }
bool FaultInjector::UseStaleGradients(int64_t step) { return From("stale_grad", step) != nullptr; }
bool FaultInjector::ScaleByLocalCount(int64_t step) { return From("wrong_grad_scale", step) != nullptr; }
bool FaultInjector::ReorderedReduction(int64_t step) { return From("nondeterministic_reduce", step) != nullptr; }
bool FaultInjector::SkipGradClip(int64_t step) { return From("skip_grad_clip", step) != nullptr; }
int64_t FaultInjector::LearningRateStepOffset(int64_t step) { return From("lr_mismatch", step) ? 1 : 0; }
bool FaultInjector::DiscardParamAllGather(int64_t step) { return From("skip_param_allgather", step) != nullptr; }
bool FaultInjector::DiscardBufferSync(int64_t step) { return From("unsynced_buffers", step) != nullptr; }

// bitflip: silent data corruption of one bit of one parameter element.
void FaultInjector::OnAfterOptimizerStep(int64_t step, torch::nn::Module& model) {
  const Injection* inj = At("bitflip", step);
  if (!inj) return;
  const int bit = std::atoi(Param(*inj, "bit", "22").c_str());
  const int64_t index = std::atoll(Param(*inj, "index", "0").c_str());
  for (auto& item : model.named_parameters()) {
    if (!inj->tensor.empty() && fnmatch(inj->tensor.c_str(), item.key().c_str(), 0) != 0) continue;
    torch::NoGradGuard no_grad;
    torch::Tensor flat = item.value().view({-1});
    if (flat.scalar_type() != torch::kFloat32 || index >= flat.numel()) continue;
    torch::Tensor bits = flat.view(torch::kInt32);
    bits.index_put_({index}, bits.index({index}).bitwise_xor(static_cast<int32_t>(1u << (bit & 31))));
    return;
  }
}

}  // namespace lockstep
