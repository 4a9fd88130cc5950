// Who this process is in the job: rank, world, host, slice and peers, and the device it should
// use. Discovery reads the launcher's environment (torchrun, Open MPI, PMIx, Slurm) and must run
// exactly once per process: a second discovery in the middle of training is the PyTorch/XLA
// multi-slice bug (pytorch/xla#8812) that the discovery_count checker catches, so every call is
// recorded, as `lockstep.topology`, in the process's discovery log (harness/discovery), with
// where it came from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/scenario/scenario.h"

namespace lockstep {

struct Topology {
  int world_size = 1;
  int rank = 0;
  int local_rank = 0;        // rank among the processes on this host
  int local_world_size = 1;
  std::string host;

  // Multi-slice: `slices` groups of consecutive ranks (slice = rank / slice_size).
  int slices = 1;
  int slice = 0;
  int slice_size = 1;
  int slice_rank = 0;              // rank inside the slice
  std::vector<int> slice_peers;    // world ranks of this slice, ascending, this rank included
  std::vector<int> cross_peers;    // world ranks with this slice_rank, one per slice, ascending

  // Where rank and size came from: "torchrun", "openmpi", "pmix", "slurm" or "single".
  std::string source = "single";

  int cuda_device_count = 0;  // 0 when built without CUDA or when no device is visible
  int cuda_device = -1;       // local_rank % cuda_device_count (ranks may share a GPU); -1 without

  // The torch device string of a rank that trains on `device` (EffectiveDevice of its scenario):
  // "cpu", or "cuda:<cuda_device>". Unavailable when cuda is asked for and no CUDA device is
  // visible (or the build has no CUDA): never a silent run on the CPU instead.
  Result<std::string> DeviceFor(Device device) const;
};

// Works out the topology from the environment, in this order: torchrun (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE), PMIx
// (PMIX_RANK, with the size from Slurm), Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID); a
// single process otherwise. `phase` and `step` say who asked ("startup", 0), for the record.
// Malformed or inconsistent variables, or a world that `slices` does not divide, are
// InvalidArgument. Every call counts, failed ones included.
Result<Topology> DiscoverTopology(int slices, const std::string& phase, int64_t step);

}  // namespace lockstep
