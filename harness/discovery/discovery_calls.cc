#include "harness/discovery/discovery_calls.h"

namespace lockstep {

const std::vector<DiscoveryCall>& DiscoveryCallTable() {
  static const std::vector<DiscoveryCall> kCalls = {
      {"lockstep.topology", "lockstep-rank's own rank, host, slice and device discovery", true},
      {"mpi.init", "MPI_Init", true},
      {"mpi.init_thread", "MPI_Init_thread", true},
      {"mpi.comm_split", "MPI_Comm_split: a new communicator", false},
      {"mpi.comm_split_type", "MPI_Comm_split_type: a communicator per node (or other type)", false},
      {"mpi.comm_create", "MPI_Comm_create: a communicator from a group", false},
      {"mpi.comm_dup", "MPI_Comm_dup: a copy of a communicator", false},
      {"torch.init_process_group", "torch.distributed.init_process_group", true},
      {"torch.new_group", "torch.distributed.new_group: a process group and its backend", false},
      {"torch.new_subgroups", "torch.distributed.new_subgroups(_by_enumeration): process groups", false},
      {"torch.init_device_mesh", "torch.distributed init_device_mesh or DeviceMesh(...): a mesh and a process group per dim", false},
      {"torch.destroy_process_group", "torch.distributed.destroy_process_group of one process group", false,
       DiscoveryKind::kTeardown},
      {"cuda.init", "cuInit: the CUDA driver's initialization (the process's first that succeeded)", true,
       DiscoveryKind::kFirstUse},
      {"cuda.device_count", "cudaGetDeviceCount or cuDeviceGetCount: a question about the device count", false,
       DiscoveryKind::kQuery},
      {"nccl.comm_init", "ncclCommInitRank & co. (seen by the NCCL profiler plugin): a new NCCL communicator", false,
       DiscoveryKind::kFirstUse},
  };
  return kCalls;
}

const DiscoveryCall* FindDiscoveryCall(std::string_view name) {
  for (const DiscoveryCall& c : DiscoveryCallTable()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string UnknownDiscoveryCallMessage(std::string_view name) {
  std::string text = "unknown discovery call \"" + std::string(name) + "\"; expected one of:";
  const char* sep = " ";
  for (const DiscoveryCall& c : DiscoveryCallTable()) {
    text += sep + std::string(c.name);
    sep = ", ";
  }
  return text;
}

}  // namespace lockstep
