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
  CaptureList(TensorKind kind, std::vector<ListedTensor> entries);

  size_t size() const { return entries_.size(); }

  // The records of `tensors`, one per entry, in order (digest and norm as TensorCapture computes
  // them). A sparse tensor is digested as its dense values. Fails when the count differs or where
  // LibTorch throws, naming the tensor. Safe to call from several threads (one at a time).
  Result<std::vector<TensorRecord>> Capture(const std::vector<torch::Tensor>& tensors);

 private:
  const TensorKind kind_;
  const std::vector<ListedTensor> entries_;
  std::mutex mu_;
  TensorCapture capture_;
};

}  // namespace lockstep::probe
