// The communicators a data-parallel rank syncs over. With slices == 1 the slice group is the
// world and there is no cross group; with slices > 1 the slice holds consecutive ranks and the
// cross group the ranks that hold the same slice rank in every slice (the same shard).
#pragma once

#include <torch/types.h>

#include "harness/comm/communicator.h"
#include "harness/core/status.h"

namespace lockstep {

struct ProcessGroups {
  Communicator* world = nullptr;
  Communicator* slice = nullptr;  // == world when slices == 1
  Communicator* cross = nullptr;  // null when slices == 1
  int slices = 1;

  bool hierarchical() const { return cross != nullptr; }
  // Elements a flat buffer must be a multiple of, so that it splits evenly inside a slice.
  int64_t shard_multiple() const { return slice->size(); }
};

// Sums `flat` over all ranks, in place. Hierarchical when slices > 1: reduce-scatter inside the
// slice, all-reduce of the shard across slices, all-gather inside the slice (the multi-slice
// pattern). `flat` is contiguous and its numel a multiple of shard_multiple().
Status AllReduceSum(const ProcessGroups& groups, torch::Tensor& flat);

// Pads a 1-D tensor with zeros to a multiple of `multiple` elements.
torch::Tensor PadToMultiple(const torch::Tensor& flat, int64_t multiple);

}  // namespace lockstep
