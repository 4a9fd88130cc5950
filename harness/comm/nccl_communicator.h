// The `nccl` backend: NCCL collectives on CUDA tensors, one rank per GPU. The unique id is
// bootstrapped over an MPI group or a c10d store. Every call is blocking: it runs on the
// communicator's own stream, which is a blocking stream (it waits for LibTorch's default stream),
// and synchronizes before returning. Compiled only when LOCKSTEP_HAVE_NCCL.
//
// The collectives work on raw device pointers underneath (the *Raw methods): a CPU-only LibTorch
// (Debian's) cannot make CUDA tensors, and the raw entry points keep the backend testable there on
// a machine that has a GPU.
#pragma once

#include <c10/core/ScalarType.h>

#include <memory>
#include <string>

#include "harness/comm/communicator.h"
#include "harness/scenario/scenario.h"
#include "harness/comm/rendezvous_options.h"

struct ncclComm;
struct CUstream_st;

namespace lockstep {

class MpiCommunicator;

class NcclCommunicator final : public Communicator {
 public:
  // CUDA devices visible to this process; 0 when none or when the driver is missing.
  static int DeviceCount();

  // The world group on `device`; rank 0 creates the unique id and publishes it in the store.
  static Result<std::unique_ptr<NcclCommunicator>> CreateOverStore(const RendezvousOptions& options, int device);
  // A group with the ranks of `mpi` on `device`; rank 0 of `mpi` broadcasts the unique id.
  static Result<std::unique_ptr<NcclCommunicator>> CreateOverMpi(MpiCommunicator& mpi, int device);

  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& group_name() const override { return name_; }
  std::string backend_name() const override { return ToString(Backend::kNccl); }
  int device() const { return device_; }

  Status AllReduce(torch::Tensor& tensor, ReduceOp op) override;
  Status AllGather(const torch::Tensor& input, torch::Tensor& output) override;
  Status ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) override;
  Status Broadcast(torch::Tensor& tensor, int root) override;
  Status Barrier() override;
  // ncclCommSplit (NCCL >= 2.18); Unavailable with an older NCCL.
  Result<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& name) override;

  // The same collectives on device memory of this communicator's device. Counts are elements.
  // avg is ncclAvg: NCCL scales each contribution by 1/size before summing floating types, so its
  // rounding can differ from the sum-then-divide of the other backends.
  Status AllReduceRaw(void* data, int64_t count, c10::ScalarType dtype, ReduceOp op);
  Status AllGatherRaw(const void* input, void* output, int64_t count_per_rank, c10::ScalarType dtype);
  Status ReduceScatterRaw(const void* input, void* output, int64_t count_per_rank, c10::ScalarType dtype,
                          ReduceOp op);
  Status BroadcastRaw(void* data, int64_t count, c10::ScalarType dtype, int root);

 private:
  NcclCommunicator(ncclComm* comm, CUstream_st* stream, float* scratch, int device, int rank, int size,
                   int world_rank, std::string name);
  static Result<std::unique_ptr<NcclCommunicator>> Init(const void* unique_id, int device, int rank, int size,
                                                        int world_rank, const std::string& name);
  // Takes `comm` (ncclCommInitRank or ncclCommSplit made it on `device`, current): gives it its
  // stream and Barrier scratch, or destroys it and says why, prefixed with `context`.
  static Result<std::unique_ptr<NcclCommunicator>> Adopt(ncclComm* comm, int device, int rank, int size,
                                                         int world_rank, const std::string& name,
                                                         const std::string& context);
  Status CheckTensor(const torch::Tensor& t, const char* call) const;
  // Waits for the stream, then asks NCCL whether the communicator failed asynchronously.
  Status Finish(const char* call);

  ncclComm* comm_;
  CUstream_st* stream_;
  float* scratch_;  // one float of device memory for Barrier
  int device_;
  int rank_;
  int size_;
  int world_rank_;
  std::string name_;
};

}  // namespace lockstep
