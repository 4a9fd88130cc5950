#include "harness/discovery/discovery_calls.h"

namespace lockstep {

const std::vector<DiscoveryCall>& DiscoveryCallTable() {
  static const std::vector<DiscoveryCall> kCalls = {
      {"lockstep.topology", "lockstep-rank's own rank, host, slice and device discovery", "lockstep-rank", true},
      {"mpi.init", "MPI_Init", "PMPI", true},
      {"mpi.init_thread", "MPI_Init_thread", "PMPI", true},
      {"mpi.comm_split", "MPI_Comm_split: a new communicator", "PMPI", false},
      {"mpi.comm_split_type", "MPI_Comm_split_type: a communicator per node (or other type)", "PMPI", false},
      {"mpi.comm_create", "MPI_Comm_create: a communicator from a group", "PMPI", false},
      {"mpi.comm_dup", "MPI_Comm_dup: a copy of a communicator", "PMPI", false},
      {"torch.init_process_group", "torch.distributed.init_process_group", "probe", true},
      {"torch.new_group", "torch.distributed.new_group: a process group and its backend", "probe", false},
      {"torch.new_subgroups", "torch.distributed.new_subgroups(_by_enumeration): process groups", "probe", false},
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
