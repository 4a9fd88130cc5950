// The records of a list of tensors: names, kinds, dtypes and element counts tensor by tensor, then
// every byte digested and summed in one pass (MultiTensorDigest). What lockstep-rank records for a
// step (StepRecorder::Capture) and what the probe records for a kind of tensor (probe_module.cc):
// one place decides how a tensor becomes a TensorRecord, so both write the same fields the same way
// (MakeTensorRecord, the per-tensor definition, is what the tests hold it to).
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "harness/capture/multi_tensor_digest.h"
#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// Writes into `r` what a record says of `tensor` besides its digest and norm: name, kind, element
// count, dtype ("undefined" for an undefined tensor), replicated and group. Every capture path
// fills records with it (TensorCapture, and lockstep-rank's asynchronous capture, whose digests
// land later).
void DescribeTensor(std::string_view name, TensorKind kind, const torch::Tensor& tensor, bool replicated,
                    std::shared_ptr<const ReplicaGroup> group, TensorRecord& r);

class TensorCapture {
 public:
  // Starts a list whose records are written into `records`, reusing what it holds (the names'
  // storage, the digests' buffers and descriptor seeds of the last list at the same positions):
  // a step that captures the tensors of the last allocates nothing.
  void Begin(std::vector<TensorRecord>& records);

  // Appends the record of `tensor` (any dtype, device, layout; undefined too). The tensor is read
  // in Finish(): it must stay alive and unchanged until then. `group`: the ranks it is compared
  // across when replicated, null for the whole world. Fails only where LibTorch throws (a failing
  // device copy), naming the tensor.
  Status Add(std::string_view name, TensorKind kind, const torch::Tensor& tensor, bool replicated,
             std::shared_ptr<const ReplicaGroup> group = nullptr);

  // Digests and norms every tensor added since Begin(); the records then hold exactly those
  // tensors, in order. Fails only on a CUDA error (device tensors).
  Status Finish();

 private:
  MultiTensorDigest digests_;
  std::vector<TensorRecord>* records_ = nullptr;
  size_t size_ = 0;
};

}  // namespace lockstep
