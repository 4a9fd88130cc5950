#include "harness/capture/tensor_capture.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "harness/capture/dtype_name.h"

namespace lockstep {

void DescribeTensor(std::string_view name, TensorKind kind, const torch::Tensor& tensor, bool replicated,
                    std::shared_ptr<const ReplicaGroup> group, TensorRecord& r) {
  r.name.assign(name.data(), name.size());
  r.kind = kind;
  r.numel = tensor.defined() ? tensor.numel() : 0;
  r.dtype = tensor.defined() ? DtypeName(tensor.scalar_type()) : "undefined";
  r.replicated = replicated;
  r.group = std::move(group);
}

namespace {

// Whether `r` already says what DescribeTensor would write into it.
bool Describes(const TensorRecord& r, std::string_view name, TensorKind kind, const torch::Tensor& tensor,
               bool replicated, const std::shared_ptr<const ReplicaGroup>& group) {
  if (r.kind != kind || r.replicated != replicated || r.group != group || r.name != name) return false;
  if (!tensor.defined()) return r.numel == 0 && r.dtype == "undefined";
  return r.numel == tensor.numel() && r.dtype == DtypeName(tensor.scalar_type());
}

uint64_t NewLayoutId() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

void TensorCapture::Begin(std::vector<TensorRecord>& records) {
  same_layout_ = false;  // no id came with them to say what they hold
  step_ = nullptr;
  finished_ = false;
  digested_ = false;
  records_ = &records;
  size_ = 0;
  digests_.Clear();
}

void TensorCapture::Begin(StepRecord& record) {
  // The record's id vouches for what it holds, whichever record the last list went into (the
  // rank's asynchronous capture cycles through a few): ids are never given to two layouts, and a
  // record's id is cleared while a list is written into it, so a list that fails leaves none.
  const bool same = finished_ && record.layout_id != 0 && record.layout_id == layout_id_;
  Begin(record.tensors);
  record.layout_id = 0;
  same_layout_ = same;
  step_ = &record;
}

Status TensorCapture::Add(std::string_view name, TensorKind kind, const torch::Tensor& tensor, bool replicated,
                          std::shared_ptr<const ReplicaGroup> group) {
  try {
    digests_.Add(tensor);
  } catch (const c10::Error& e) {
    same_layout_ = false;
    return InternalError("digest of " + std::string(name) + ": " + e.what_without_backtrace());
  }
  std::vector<TensorRecord>& records = *records_;
  if (size_ == records.size()) {
    records.emplace_back();
    same_layout_ = false;
  }
  TensorRecord& r = records[size_++];
  // Compared, not written, while the layout is the last list's: the same reads as writing it, and
  // the writer then need not compare the layout again.
  if (same_layout_ && Describes(r, name, kind, tensor, replicated, group)) return Status::Ok();
  same_layout_ = false;
  DescribeTensor(name, kind, tensor, replicated, std::move(group), r);
  return Status::Ok();
}

Status TensorCapture::Finish() {
  std::vector<TensorRecord>& records = *records_;
  if (records.size() != size_) same_layout_ = false;
  records.resize(size_);
  LOCKSTEP_RETURN_IF_ERROR(digests_.Run(records.data()));
  Close();
  digested_ = true;
  return Status::Ok();
}

bool TensorCapture::CanRepeat(const StepRecord& record) const {
  return finished_ && digested_ && step_ == &record && records_ == &record.tensors && record.layout_id == layout_id_ &&
         record.tensors.size() == size_ && digests_.Repeatable();
}

bool TensorCapture::CanRepeatLater(const StepRecord& record) const {
  return finished_ && layout_id_ != 0 && record.layout_id == layout_id_ && record.tensors.size() == size_ &&
         digests_.Repeatable();
}

Status TensorCapture::Repeat(StepRecord& record) {
  record.layout_id = 0;
  finished_ = false;
  LOCKSTEP_RETURN_IF_ERROR(digests_.Run(record.tensors.data()));
  record.layout_id = layout_id_;
  finished_ = true;
  return Status::Ok();
}

std::optional<size_t> TensorCapture::FirstDifference(const StepRecord& mine, const TensorCapture& other,
                                                     const StepRecord& theirs) const {
  const size_t n = std::min({size_, other.size_, mine.tensors.size(), theirs.tensors.size()});
  for (size_t i = 0; i < n; ++i) {
    const TensorRecord& a = mine.tensors[i];
    const TensorRecord& b = theirs.tensors[i];
    if (a.name != b.name || a.kind != b.kind || a.numel != b.numel || a.dtype != b.dtype ||
        a.replicated != b.replicated || a.group != b.group || !digests_.SameEntry(i, other.digests_)) {
      return i;
    }
  }
  if (size_ != other.size_ || mine.tensors.size() != size_ || theirs.tensors.size() != other.size_) return n;
  return std::nullopt;
}

void TensorCapture::FinishLater() {
  std::vector<TensorRecord>& records = *records_;
  if (records.size() != size_) same_layout_ = false;
  records.resize(size_);
  Close();
}

void TensorCapture::Close() {
  if (!same_layout_) layout_id_ = NewLayoutId();
  if (step_ != nullptr) step_->layout_id = layout_id_;
  finished_ = true;
}

}  // namespace lockstep
