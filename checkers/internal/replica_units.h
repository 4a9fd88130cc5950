// The ranks compared together at one step by the checks of per-step scalars that replicas share
// (optimizer_settings, forward_passes): the ranks that hold replicas of the same parameters.
#pragma once

#include <string>
#include <vector>

#include "harness/trace/trace_record.h"

namespace lockstep::internal {

struct ReplicaUnit {
  std::vector<int> ranks;  // increasing, each with a record at the step
  std::string label;       // how a finding names the unit: "" for every rank, " in replica group {1, 3} ..."
};

// The units of a step (`records[r]`: rank r's record, null where it has none): each replica group
// a recorded parameter names, among its members that recorded the step (HSDP's replicas of one
// shard, a pipeline stage's data-parallel ranks), and every rank that recorded the step when some
// parameter is held by every rank (no group) or no parameter names a group at all (DDP, or a fully
// sharded model, whose shards train in step too).
std::vector<ReplicaUnit> ReplicaUnitsOf(const std::vector<const StepRecord*>& records);

}  // namespace lockstep::internal
