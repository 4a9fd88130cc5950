// A list of tensors the probe captures at every step under the same names and replica groups
// (probe/lockstep/_capture_lists.py builds such a list once and reuses it while it holds): the
// names, kind and groups are converted and looked up once, and one TensorCapture is kept from
// capture to capture, so that a step converts only its tensors and each position's digest seed is
// reused (MultiTensorDigest's per-position descriptor cache) instead of derived anew.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "harness/capture/tensor_capture.h"
#include "harness/core/status.h"
#include "harness/trace/trace_record.h"
#include "probe/deferred_steps.h"

namespace lockstep::probe {

// One entry's place in the replicated comparison: `shared` false for a tensor no other rank must
// equal (a shard, a Partial addend); `group` null for the whole world.
struct ListedTensor {
  std::string name;
  bool shared = true;
  std::shared_ptr<const ReplicaGroup> group;
};

class CaptureList {
 public:
  // `deferred`: where captures go whose digests may land later (null: none do).
  CaptureList(TensorKind kind, std::vector<ListedTensor> entries, std::shared_ptr<DeferredSteps> deferred = nullptr);

  size_t size() const { return entries_.size(); }

  // The records of `tensors`, one per entry, in order (digest and norm as TensorCapture computes
  // them). A sparse tensor is digested as its dense values. With `may_defer` (the caller knows the
  // program's work on these tensors is queued where `deferred` orders it) and a `deferred` that
  // reads them where they are, the digests and norms land later (Captured::pending); otherwise
  // they are set on return. Fails when the count differs or where LibTorch throws, naming the
  // tensor. Safe to call from several threads (one at a time).
  Result<Captured> Capture(const std::vector<torch::Tensor>& tensors, bool may_defer = false);

  bool deferrable() const { return deferred_ != nullptr; }
  // A capture its caller could not defer (DeferredSteps::NoteDigestedAtOnce).
  void NoteDigestedAtOnce() {
    if (deferred_) deferred_->NoteDigestedAtOnce();
  }

 private:
  const TensorKind kind_;
  const std::vector<ListedTensor> entries_;
  const std::shared_ptr<DeferredSteps> deferred_;
  std::vector<CaptureBuffer> buffers_;  // scratch, under mu_
  std::mutex mu_;
  TensorCapture capture_;
};

}  // namespace lockstep::probe
