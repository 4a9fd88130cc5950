// The `mpi` backend: Open MPI collectives on CPU tensors. Each communicator owns a duplicate of
// the MPI communicator it was built from, with MPI_ERRORS_RETURN set, so that our traffic never
// mixes with the caller's and an MPI failure comes back as a Status instead of aborting the job.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "harness/comm/communicator.h"
#include "harness/scenario/scenario.h"
#include "harness/comm/mpi_session.h"

namespace lockstep {

class MpiCommunicator final : public Communicator {
 public:
  // The world group ("world"): a duplicate of MPI_COMM_WORLD. Initializes MPI when needed.
  static Result<std::unique_ptr<MpiCommunicator>> CreateWorld();
  // A duplicate of `comm` named `name`; the caller keeps (and frees) `comm`.
  static Result<std::unique_ptr<MpiCommunicator>> Duplicate(MPI_Comm comm, const std::string& name);

  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& group_name() const override { return name_; }
  std::string backend_name() const override { return ToString(Backend::kMpi); }

  Status AllReduce(torch::Tensor& tensor, ReduceOp op) override;
  Status AllGather(const torch::Tensor& input, torch::Tensor& output) override;
  Status ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) override;
  Status Broadcast(torch::Tensor& tensor, int root) override;
  Status Barrier() override;
  Result<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& name) override;

  // For bootstrapping other backends over this group (the NCCL unique id).
  MPI_Comm comm() const { return comm_; }

 private:
  // Takes ownership of `comm`, which already has MPI_ERRORS_RETURN set.
  MpiCommunicator(std::shared_ptr<MpiSession> session, MPI_Comm comm, std::string name);
  // MPI_SUCCESS -> ok; otherwise "rank R group G: <call>: <MPI_Error_string>".
  Status Check(int mpi_error, const char* call) const;
  Status ReduceInPlaceOrInto(const torch::Tensor& input, torch::Tensor& output, ReduceOp op, bool scatter);

  std::shared_ptr<MpiSession> session_;
  MPI_Comm comm_;
  std::string name_;
  int rank_ = 0;
  int size_ = 1;
  int world_rank_ = 0;
};

}  // namespace lockstep
