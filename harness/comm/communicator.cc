#include "harness/comm/communicator.h"

namespace lockstep {

// These spellings are the trace vocabulary (docs/TRACE.md): changing one is a schema change.
const char* ToString(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMax: return "max";
  }
  return "unknown";
}

const char* ToString(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kBarrier: return "barrier";
  }
  return "unknown";
}

}  // namespace lockstep
