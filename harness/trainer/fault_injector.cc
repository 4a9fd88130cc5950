#include "harness/trainer/fault_injector.h"

#include <fnmatch.h>
#include <signal.h>
#include <unistd.h>

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <thread>

#include "harness/scenario/injection_kinds.h"

namespace lockstep {
namespace {

namespace kind = injection_kind;
namespace param = injection_param;

std::string Param(const Injection& inj, std::string_view key, const std::string& fallback) {
  auto it = inj.params.find(std::string(key));
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

const Injection* FaultInjector::From(std::string_view kind, int64_t step) const {
  for (const auto& inj : mine_) {
    if (inj.kind == kind && step >= inj.step) return &inj;
  }
  return nullptr;
}

const Injection* FaultInjector::At(std::string_view kind, int64_t step) const {
  for (const auto& inj : mine_) {
    if (inj.kind == kind && step == inj.step) return &inj;
  }
  return nullptr;
}

bool FaultInjector::AnyRank(std::string_view kind) const {
  return std::any_of(all_.begin(), all_.end(), [&](const Injection& i) { return i.kind == kind; });
}

Status FaultInjector::CheckTargets(torch::nn::Module& model) const {
  for (size_t i = 0; i < all_.size(); ++i) {
    const Injection& inj = all_[i];
    if (inj.kind != kind::kBitflip) continue;
    const int64_t index = std::atoll(Param(inj, param::kIndex, std::to_string(param::kDefaultIndex)).c_str());
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
uint64_t FaultInjector::InitSeedOffset() { return From(kind::kNoInitialBroadcast, 0) ? 7919ULL * (rank_ + 1) : 0; }
bool FaultInjector::SkipInitialBroadcast() { return AnyRank(kind::kNoInitialBroadcast); }

void FaultInjector::OnStepBegin(int64_t step) {
  step_ = step;
  if (const Injection* inj = At(kind::kCrash, step)) {
    if (std::optional<int> sig = CrashSignal(Param(*inj, param::kSignal, ""))) raise(*sig);
    std::_Exit(std::atoi(Param(*inj, param::kExitCode, std::to_string(param::kDefaultExitCode)).c_str()));
  }
}

// double_discovery (pytorch/xla#8812, #8954): tracing the flash-attention forward ran device
// discovery a second time.
void FaultInjector::OnAttentionForward() {
  if (!rediscovered_ && At(kind::kDoubleDiscovery, step_)) {
    rediscovered_ = true;
    if (rediscover_) rediscover_("attention_forward", step_);
  }
}

// no_sync_off_by_one (FunASR PR 3472): the rank syncs one micro-step early, so its last
// micro-batch's gradient is added after the all-reduce, unsynced.
bool FaultInjector::SyncOnMicroStep(int64_t step, int micro, int grad_accum) {
  if (grad_accum > 1 && From(kind::kNoSyncOffByOne, step)) return micro == grad_accum - 2;
  return micro == grad_accum - 1;
}

// hang: the rank blocks forever before its next collective; the others wait in it.
bool FaultInjector::BeforeCollective(const CollectiveFingerprint& /*fp*/, int64_t step) {
  if (From(kind::kHang, step)) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(3600));
  }
  return true;
}

bool FaultInjector::ExtraCollective(int64_t step) { return At(kind::kExtraCollective, step) != nullptr; }
bool FaultInjector::KeepLocalGradients(int64_t step) { return From(kind::kSkipGradAllreduce, step) != nullptr; }
bool FaultInjector::UseStaleGradients(int64_t step) { return From(kind::kStaleGrad, step) != nullptr; }
bool FaultInjector::ScaleByLocalCount(int64_t step) { return From(kind::kWrongGradScale, step) != nullptr; }
bool FaultInjector::ReorderedReduction(int64_t step) { return From(kind::kNondeterministicReduce, step) != nullptr; }
bool FaultInjector::SkipGradClip(int64_t step) { return From(kind::kSkipGradClip, step) != nullptr; }
int64_t FaultInjector::LearningRateStepOffset(int64_t step) { return From(kind::kLrMismatch, step) ? 1 : 0; }
bool FaultInjector::DiscardParamAllGather(int64_t step) { return From(kind::kSkipParamAllgather, step) != nullptr; }
bool FaultInjector::DiscardBufferSync(int64_t step) { return From(kind::kUnsyncedBuffers, step) != nullptr; }

// bitflip: silent data corruption of one bit of one parameter element.
void FaultInjector::OnAfterOptimizerStep(int64_t step, torch::nn::Module& model) {
  const Injection* inj = At(kind::kBitflip, step);
  if (!inj) return;
  const int bit = std::atoi(Param(*inj, param::kBit, std::to_string(param::kDefaultBit)).c_str());
  const int64_t index = std::atoll(Param(*inj, param::kIndex, std::to_string(param::kDefaultIndex)).c_str());
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
