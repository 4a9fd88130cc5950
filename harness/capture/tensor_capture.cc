#include "harness/capture/tensor_capture.h"

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

void TensorCapture::Begin(std::vector<TensorRecord>& records) {
  records_ = &records;
  size_ = 0;
  digests_.Clear();
}

Status TensorCapture::Add(std::string_view name, TensorKind kind, const torch::Tensor& tensor, bool replicated,
                          std::shared_ptr<const ReplicaGroup> group) {
  try {
    digests_.Add(tensor);
  } catch (const c10::Error& e) {
    return InternalError("digest of " + std::string(name) + ": " + e.what_without_backtrace());
  }
  std::vector<TensorRecord>& records = *records_;
  if (size_ == records.size()) records.emplace_back();
  DescribeTensor(name, kind, tensor, replicated, std::move(group), records[size_++]);
  return Status::Ok();
}

Status TensorCapture::Finish() {
  std::vector<TensorRecord>& records = *records_;
  records.resize(size_);
  LOCKSTEP_RETURN_IF_ERROR(digests_.Run());
  for (size_t i = 0; i < size_; ++i) {
    records[i].digest = digests_.digest(i);
    records[i].norm = digests_.norm(i);
  }
  return Status::Ok();
}

}  // namespace lockstep
