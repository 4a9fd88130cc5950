#include "harness/trainer/parallel/process_groups.h"

#include <torch/torch.h>

namespace lockstep {

Status AllReduceSum(const ProcessGroups& groups, torch::Tensor& flat) {
  if (!groups.hierarchical()) return groups.world->AllReduce(flat, ReduceOp::kSum);
  const int64_t shard_elems = flat.numel() / groups.slice->size();
  torch::Tensor shard = torch::empty({shard_elems}, flat.options());
  LOCKSTEP_RETURN_IF_ERROR(groups.slice->ReduceScatter(flat, shard, ReduceOp::kSum));
  LOCKSTEP_RETURN_IF_ERROR(groups.cross->AllReduce(shard, ReduceOp::kSum));
  return groups.slice->AllGather(shard, flat);
}

torch::Tensor PadToMultiple(const torch::Tensor& flat, int64_t multiple) {
  const int64_t n = flat.numel();
  const int64_t padded = (n + multiple - 1) / multiple * multiple;
  if (padded == n) return flat.contiguous();
  return torch::cat({flat.reshape({-1}), torch::zeros({padded - n}, flat.options())});
}

}  // namespace lockstep
