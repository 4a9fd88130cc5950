// A decorator that lets a host-memory backend (mpi, gloo) carry tensors that live on a device:
// each collective copies the device tensors it is given to host memory, runs the inner backend's
// collective on the copies, and copies the results back. So `device: cuda` works with every
// backend (docs/GPU.md), and the transports themselves keep refusing what they cannot read.
// Tensors already in host memory pass through untouched: no copy, the inner call sees them.
// The factory (communicator_factory.cc) wraps mpi and gloo with it when the device is cuda.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "harness/comm/communicator.h"

namespace lockstep {

class HostStagingCommunicator final : public Communicator {
 public:
  // Whether a tensor has to be staged; the default is "not in CPU memory". Tests inject another
  // one to exercise the copy path on a machine without a device.
  using NeedsStaging = std::function<bool(const torch::Tensor&)>;
  static bool OffHost(const torch::Tensor& tensor);

  explicit HostStagingCommunicator(std::unique_ptr<Communicator> inner, NeedsStaging needs_staging = OffHost);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::string& group_name() const override { return inner_->group_name(); }
  std::string backend_name() const override { return inner_->backend_name(); }

  // A call whose tensors all stay in host memory goes to the inner backend as it is. Otherwise the
  // arguments are checked first, as every backend checks them (same device, sizes), so that the
  // copies cannot hide a mismatch; a failed inner call leaves the caller's tensors as they were.
  Status AllReduce(torch::Tensor& tensor, ReduceOp op) override;
  Status AllGather(const torch::Tensor& input, torch::Tensor& output) override;
  Status ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) override;
  Status Broadcast(torch::Tensor& tensor, int root) override;
  Status Barrier() override { return inner_->Barrier(); }
  // The sub-group is staged the same way.
  Result<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& name) override;

 private:
  HostStagingCommunicator(std::unique_ptr<Communicator> inner, NeedsStaging needs_staging, int world_rank);
  // A host copy of `tensor` when it needs staging, else `tensor` itself.
  torch::Tensor Stage(const torch::Tensor& tensor) const;

  std::unique_ptr<Communicator> inner_;
  NeedsStaging needs_staging_;
  int world_rank_;  // for error messages of sub-groups
};

}  // namespace lockstep
