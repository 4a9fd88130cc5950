// A decorator over any Communicator (like c10d's ProcessGroupWrapper): numbers every collective
// per group (seq from 0), builds its CollectiveFingerprint, tells a CollectiveListener before and
// after the backend runs it, and gives a CollectiveInterceptor a chance to skip it on this rank (a fault
// injection). The trace records these fingerprints; collective_order compares them across ranks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "harness/comm/collective_interceptor.h"
#include "harness/comm/collective_listener.h"
#include "harness/comm/communicator.h"

namespace lockstep {

class RecordingCommunicator final : public Communicator {
 public:
  // `listener` and `interceptor` may be null and must outlive this communicator and its Split children.
  RecordingCommunicator(std::unique_ptr<Communicator> inner, CollectiveListener* listener, CollectiveInterceptor* interceptor);

  // The optimizer step the next collectives belong to (0: initialization). Shared with every
  // communicator Split from this one, so the trainer sets it once per step.
  void set_step(int64_t step) { step_->store(step, std::memory_order_relaxed); }
  int64_t step() const { return step_->load(std::memory_order_relaxed); }
  // The seq the next collective on this group will get.
  uint64_t next_seq() const { return next_seq_; }
  Communicator& inner() { return *inner_; }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::string& group_name() const override { return inner_->group_name(); }
  std::string backend_name() const override { return inner_->backend_name(); }

  Status AllReduce(torch::Tensor& tensor, ReduceOp op) override;
  Status AllGather(const torch::Tensor& input, torch::Tensor& output) override;
  Status ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) override;
  Status Broadcast(torch::Tensor& tensor, int root) override;
  Status Barrier() override;
  // The child is a RecordingCommunicator too, with its own seq counter and the shared step.
  Result<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& name) override;

  // The note an ok end status carries when the interceptor skipped the collective on this rank.
  static constexpr const char* kSkippedNote = "skipped on this rank by a fault-injection hook";

 private:
  RecordingCommunicator(std::unique_ptr<Communicator> inner, CollectiveListener* listener, CollectiveInterceptor* interceptor,
                        std::shared_ptr<std::atomic<int64_t>> step);
  CollectiveFingerprint Fingerprint(CollectiveOp op, const torch::Tensor* tensor, int root,
                                    const ReduceOp* reduce);
  template <typename Call>
  Status Record(const CollectiveFingerprint& fp, Call&& call);

  std::unique_ptr<Communicator> inner_;
  CollectiveListener* listener_;
  CollectiveInterceptor* interceptor_;
  std::shared_ptr<std::atomic<int64_t>> step_;
  uint64_t next_seq_ = 0;
};

}  // namespace lockstep
