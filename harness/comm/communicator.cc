#include "harness/comm/communicator.h"

#include "harness/core/name_table.h"

namespace lockstep {

// These spellings are the trace vocabulary (docs/TRACE.md): changing one is a schema change.
const char* ToString(ReduceOp op) {
  static const NameTable<ReduceOp> kTable = {{"sum", ReduceOp::kSum}, {"avg", ReduceOp::kAvg}, {"max", ReduceOp::kMax}};
  return NameIn(kTable, op);
}

const char* ToString(CollectiveOp op) {
  static const NameTable<CollectiveOp> kTable = {{"all_reduce", CollectiveOp::kAllReduce},
                                                 {"all_gather", CollectiveOp::kAllGather},
                                                 {"reduce_scatter", CollectiveOp::kReduceScatter},
                                                 {"broadcast", CollectiveOp::kBroadcast},
                                                 {"barrier", CollectiveOp::kBarrier}};
  return NameIn(kTable, op);
}

}  // namespace lockstep
