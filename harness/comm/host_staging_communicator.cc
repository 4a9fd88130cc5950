#include "harness/comm/host_staging_communicator.h"

#include <utility>

#include "harness/comm/collective_args.h"

namespace lockstep {

bool HostStagingCommunicator::OffHost(const torch::Tensor& tensor) { return !tensor.device().is_cpu(); }

HostStagingCommunicator::HostStagingCommunicator(std::unique_ptr<Communicator> inner, NeedsStaging needs_staging)
    : HostStagingCommunicator(std::move(inner), std::move(needs_staging), -1) {
  world_rank_ = inner_->rank();
}

HostStagingCommunicator::HostStagingCommunicator(std::unique_ptr<Communicator> inner, NeedsStaging needs_staging,
                                                 int world_rank)
    : inner_(std::move(inner)), needs_staging_(std::move(needs_staging)), world_rank_(world_rank) {}

torch::Tensor HostStagingCommunicator::Stage(const torch::Tensor& tensor) const {
  if (!needs_staging_(tensor)) return tensor;
  // Always a fresh contiguous buffer: the transports need contiguous memory, and a copy of a
  // tensor that is already on the host (a test's predicate) must still be a copy.
  return torch::empty(tensor.sizes(), tensor.options().device(torch::kCPU)).copy_(tensor);
}

Status HostStagingCommunicator::AllReduce(torch::Tensor& tensor, ReduceOp op) {
  if (!needs_staging_(tensor)) return inner_->AllReduce(tensor, op);
  return GuardCall(world_rank_, group_name(), "all_reduce", [&]() -> Status {
    if (Status args = CheckAllReduceArgs(tensor); !args.ok()) {
      return args.WithContext(CallContext(world_rank_, group_name(), "all_reduce"));
    }
    torch::Tensor host = Stage(tensor);
    LOCKSTEP_RETURN_IF_ERROR(inner_->AllReduce(host, op));
    if (!host.is_same(tensor)) tensor.copy_(host);
    return Status::Ok();
  });
}

Status HostStagingCommunicator::AllGather(const torch::Tensor& input, torch::Tensor& output) {
  if (!needs_staging_(input) && !needs_staging_(output)) return inner_->AllGather(input, output);
  return GuardCall(world_rank_, group_name(), "all_gather", [&]() -> Status {
    if (Status args = CheckAllGatherArgs(input, output, size()); !args.ok()) {
      return args.WithContext(CallContext(world_rank_, group_name(), "all_gather"));
    }
    torch::Tensor host_in = Stage(input);
    torch::Tensor host_out = Stage(output);
    LOCKSTEP_RETURN_IF_ERROR(inner_->AllGather(host_in, host_out));
    if (!host_out.is_same(output)) output.copy_(host_out);
    return Status::Ok();
  });
}

Status HostStagingCommunicator::ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) {
  if (!needs_staging_(input) && !needs_staging_(output)) return inner_->ReduceScatter(input, output, op);
  return GuardCall(world_rank_, group_name(), "reduce_scatter", [&]() -> Status {
    if (Status args = CheckReduceScatterArgs(input, output, size()); !args.ok()) {
      return args.WithContext(CallContext(world_rank_, group_name(), "reduce_scatter"));
    }
    torch::Tensor host_in = Stage(input);
    torch::Tensor host_out = Stage(output);
    LOCKSTEP_RETURN_IF_ERROR(inner_->ReduceScatter(host_in, host_out, op));
    if (!host_out.is_same(output)) output.copy_(host_out);
    return Status::Ok();
  });
}

Status HostStagingCommunicator::Broadcast(torch::Tensor& tensor, int root) {
  if (!needs_staging_(tensor)) return inner_->Broadcast(tensor, root);
  return GuardCall(world_rank_, group_name(), "broadcast", [&]() -> Status {
    if (Status args = CheckBroadcastArgs(tensor, root, size()); !args.ok()) {
      return args.WithContext(CallContext(world_rank_, group_name(), "broadcast"));
    }
    torch::Tensor host = Stage(tensor);
    LOCKSTEP_RETURN_IF_ERROR(inner_->Broadcast(host, root));
    if (!host.is_same(tensor)) tensor.copy_(host);
    return Status::Ok();
  });
}

Result<std::unique_ptr<Communicator>> HostStagingCommunicator::Split(int color, int key, const std::string& name) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> child, inner_->Split(color, key, name));
  return std::unique_ptr<Communicator>(new HostStagingCommunicator(std::move(child), needs_staging_, world_rank_));
}

}  // namespace lockstep
