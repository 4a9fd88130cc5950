// A c10d process group that forwards every call to the one it wraps and records each collective
// in the probe's trace first: op, dtype, element count, group, seq, root. DDP's Reducer issues its
// gradient-bucket all-reduces on the process group it was given (through its default comm hook or
// a user's hook calling torch.distributed), so wrapping the group catches them too, which hooks
// on DDP alone would not. Point-to-point send/recv are forwarded without a record: they differ
// across ranks by design and are no collective order to compare.
//
// Backends implement c10d::Backend behind a ProcessGroup that dispatches to them by device type;
// the wrapper is a Backend registered as the group's backend for each device type
// (lockstep/_groups.py), so the ProcessGroup object every reference of the program holds stays.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <memory>
#include <string>
#include <vector>

#include "probe/probe_session.h"

namespace lockstep::probe {

using WrappedGroup = c10d::Backend;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

class RecordingProcessGroup : public WrappedGroup {
 public:
  // `group` is the name collectives are recorded under ("world", or "pg<name>" for a subgroup).
  RecordingProcessGroup(c10::intrusive_ptr<WrappedGroup> inner, std::shared_ptr<ProbeSession> session,
                        std::string group);
  // Drops the wrapped group without the GIL (see the definition).
  ~RecordingProcessGroup() override;

  const std::string getBackendName() const override { return inner_->getBackendName(); }

  // What the group reads off its backends rather than off itself (its name: the first device's
  // backend's uid), and what callers ask of a backend's capabilities and lifecycle: the inner
  // backend's answer. Splitting and shrinking stay unsupported (the default): a backend they
  // returned would bypass the recording; torch then makes new groups the ordinary way.
  void setGroupUid(const std::string& pg_uid) override {
    WrappedGroup::setGroupUid(pg_uid);
    inner_->setGroupUid(pg_uid);
  }
  bool supportsCoalescing() const override { return inner_->supportsCoalescing(); }
  bool supportsTimeEstimation() const override { return inner_->supportsTimeEstimation(); }
  void setTimeout(std::chrono::milliseconds timeout) override { inner_->setTimeout(timeout); }
  c10::intrusive_ptr<Options> getBackendOptions() override { return inner_->getBackendOptions(); }
  void registerOnCompletionHook(std::function<void(std::shared_ptr<c10d::WorkInfo>)>&& hook) override {
    inner_->registerOnCompletionHook(std::move(hook));
  }
  void waitForPendingWorks() override { inner_->waitForPendingWorks(); }
  void enableCollectivesTiming() override { inner_->enableCollectivesTiming(); }
  void eagerConnectSingleDevice(at::Device device) override { inner_->eagerConnectSingleDevice(device); }
  c10d::ErrorType getError() override { return inner_->getError(); }
  std::shared_ptr<c10::Allocator> getMemAllocator() override { return inner_->getMemAllocator(); }
  at::Tensor allocateTensor(long size, at::TensorOptions options = {}) override {
    return inner_->allocateTensor(size, options);
  }
  bool supportsTensorAlloc(c10::DeviceIndex device) override { return inner_->supportsTensorAlloc(device); }
  void abort() override { inner_->abort(); }
  void shutdown() override { inner_->shutdown(); }
  const c10::intrusive_ptr<WrappedGroup>& inner() const { return inner_; }

  WorkPtr broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override;
  WorkPtr allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  WorkPtr allreduce_coalesced(std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  WorkPtr reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  WorkPtr allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                    const c10d::AllgatherOptions& opts) override;
  WorkPtr _allgather_base(at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) override;
  WorkPtr allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                              const c10d::AllgatherOptions& opts) override;
  WorkPtr gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                 const c10d::GatherOptions& opts) override;
  WorkPtr scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                  const c10d::ScatterOptions& opts) override;
  WorkPtr reduce_scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                         const c10d::ReduceScatterOptions& opts) override;
  WorkPtr _reduce_scatter_base(at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  // Backend's defaults for these throw ("does not support"), so without a forward a program that
  // runs fine alone (all_gather_into_tensor or reduce_scatter_tensor under _coalescing_manager,
  // a sparse gradient's all-reduce) would fail only under the probe.
  WorkPtr allreduce_sparse(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  WorkPtr allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllgatherOptions& opts) override;
  WorkPtr reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::ReduceScatterOptions& opts) override;
  WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                        std::vector<int64_t>& input_splits, const c10d::AllToAllOptions& opts) override;
  WorkPtr alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                   const c10d::AllToAllOptions& opts) override;
  WorkPtr barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;
  void setSequenceNumberForGroup() override { inner_->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override { return inner_->getSequenceNumberForGroup(); }
  void startCoalescing() override { inner_->startCoalescing(); }
  WorkPtr endCoalescing() override { return inner_->endCoalescing(); }
  WorkPtr send(std::vector<at::Tensor>& tensors, int dst, int tag) override { return inner_->send(tensors, dst, tag); }
  WorkPtr recv(std::vector<at::Tensor>& tensors, int src, int tag) override { return inner_->recv(tensors, src, tag); }
  WorkPtr recvAnysource(std::vector<at::Tensor>& tensors, int tag) override {
    return inner_->recvAnysource(tensors, tag);
  }

 private:
  // Writes the begin record; returns its seq.
  uint64_t Begin(const char* op, const at::Tensor* first, int64_t count, int64_t root, const std::string& reduce);
  // An all_to_all's begin record, with its split sizes in elements (trace_record.h).
  uint64_t BeginAllToAll(const at::Tensor* first, int64_t count, std::vector<int64_t> in_splits,
                         std::vector<int64_t> out_splits);
  // Writes the end record when the work has ended (work_completion.h); `work` may be null.
  WorkPtr End(WorkPtr work, uint64_t seq);

  c10::intrusive_ptr<WrappedGroup> inner_;
  std::shared_ptr<ProbeSession> session_;
  std::string group_;
};

// "sum", "avg", "max" as lockstep-rank writes them; c10d's other reductions by their c10d name.
std::string ReduceName(const c10d::ReduceOp& op);

// Puts a RecordingProcessGroup in front of every backend of `group` (one per device type; device
// types that share a backend share its wrapper), recorded under `name`; backends already wrapped
// are left. Returns the device types newly wrapped ("cpu", "cuda").
//
// ProcessGroup::setBackend keeps the backend it already holds for a backend *type* (a second
// `_register_backend(cpu, GLOO, wrapper)` is a no-op that leaves gloo in place), so each wrapper is
// registered under a backend type the group does not use yet (CUSTOM first). Collectives dispatch
// by device type, so the type is only a label: the group's own name and default backend stay.
std::vector<std::string> InstallRecordingBackends(c10d::ProcessGroup& group, const std::shared_ptr<ProbeSession>& session,
                                                  const std::string& name);

}  // namespace lockstep::probe
