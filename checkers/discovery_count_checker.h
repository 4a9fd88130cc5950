// discovery_count: the view of the world is built once, at start-up (the PyTorch/XLA multi-slice
// bug, pytorch/xla#8812 and #8954: tracing flash attention ran device discovery a second time, in
// the middle of training, and multi-slice jobs failed or hung). It judges the real calls each
// rank's trace recorded (harness/discovery: lockstep's topology routine, MPI through PMPI,
// torch.distributed through the probe, CUDA through CUPTI, NCCL through its profiler plugin) by
// their kind (harness/discovery/discovery_calls.h):
//   - a build (topology, MPI communicators, process groups, meshes) after start-up is a finding,
//     and so is a second once-per-process one (MPI_Init) at any time;
//   - a first use (the driver's first cuInit; a group's NCCL communicator, made at its first
//     collective) may come at any time, once: a second cuInit is a finding, and so is, after
//     start-up, the same communicator again or a second communicator over ranks that have one
//     (beyond one per group built at start-up, whose communicator comes lazily);
//   - a query (the device count: cuBLAS and cuBLASLt ask it at the first matmul) never is; a
//     finding lists its rank's queries after start-up as evidence.
// The scenario's `expect.discovery` (or `lockstep exec --expect-discovery`) allows a call that
// many times, at any time. The finding names each rank and every call too many, with its step,
// phase and where it came from. It needs no scenario: any trace with discovery records can be
// judged. docs/CHECKERS.md#discovery_count gives the reasons.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class DiscoveryCountChecker : public Checker {
 public:
  std::string_view name() const override { return "discovery_count"; }
  bool reads_tensors() const override { return false; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
