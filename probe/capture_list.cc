#include "probe/capture_list.h"

#include <torch/torch.h>

#include <deque>
#include <utility>

namespace lockstep::probe {

CaptureList::CaptureList(TensorKind kind, std::vector<ListedTensor> entries, std::shared_ptr<DeferredSteps> deferred)
    : kind_(kind), entries_(std::move(entries)), deferred_(std::move(deferred)) {}

Result<Captured> CaptureList::Capture(const std::vector<torch::Tensor>& tensors, bool may_defer) {
  if (tensors.size() != entries_.size()) {
    return InvalidArgumentError("capture: " + std::to_string(tensors.size()) + " tensors for a list of " +
                           std::to_string(entries_.size()));
  }
  // The probe hands over the parameters themselves, not detached views (_capture_lists.py): what
  // the capture computes from them (a view made contiguous, a dense copy, a device norm) must not
  // be recorded for autograd.
  torch::NoGradGuard no_grad;
  Captured out;
  std::vector<TensorRecord>& records = out.records;
  records.reserve(entries_.size());
  // Sparse tensors' dense copies, alive until Finish: the capture reads bytes where they are.
  std::deque<torch::Tensor> dense;
  std::lock_guard<std::mutex> lock(mu_);
  capture_.Begin(records);
  for (size_t i = 0; i < entries_.size(); ++i) {
    const ListedTensor& e = entries_[i];
    const torch::Tensor* t = &tensors[i];
    if (t->defined() && t->layout() != torch::kStrided) {
      // A sparse gradient (nn.Embedding(sparse=True)) or state: its dense values are equal on
      // every rank after the all-reduce, whatever order its indices came in.
      try {
        dense.push_back(t->to_dense());
      } catch (const c10::Error& err) {
        return InternalError("dense copy of " + e.name + ": " + err.what_without_backtrace());
      }
      t = &dense.back();
    }
    LOCKSTEP_RETURN_IF_ERROR(capture_.Add(e.name, kind_, *t, e.shared, e.group));
  }
  if (may_defer && deferred_) {
    if (const std::optional<BufferPlace> place = capture_.Buffers(buffers_)) {
      std::vector<torch::Tensor> keep(tensors.begin(), tensors.end());
      keep.insert(keep.end(), dense.begin(), dense.end());
      LOCKSTEP_ASSIGN_OR_RETURN(out.pending, deferred_->Begin(*place, buffers_, std::move(keep)));
      if (out.pending != 0) {
        capture_.FinishLater();
        return out;
      }
    }
  }
  if (may_defer && deferred_) deferred_->NoteDigestedAtOnce();
  LOCKSTEP_RETURN_IF_ERROR(capture_.Finish());
  return out;
}

}  // namespace lockstep::probe
