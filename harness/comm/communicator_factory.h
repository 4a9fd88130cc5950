// Builds the world communicator of the backend a scenario names, for the process that discovery
// described. The only place that knows which backends this build has.
#pragma once

#include <memory>

#include "harness/comm/communicator.h"
#include "harness/core/status.h"
#include "harness/scenario/scenario.h"
#include "harness/topology/topology.h"

namespace lockstep {

// mpi: MPI_COMM_WORLD (checked against the topology's rank and size).
// gloo: c10d ProcessGroupGloo over the store named by MASTER_ADDR/MASTER_PORT or LOCKSTEP_STORE_FILE.
// nccl: on topology.cuda_device; the unique id goes over that store when one is named, else over MPI.
// A backend this build or machine lacks is Unavailable.
// `device` is where the trainer's tensors live (EffectiveDevice): on cuda, mpi and gloo come
// wrapped in HostStagingCommunicator, which moves the tensors through host memory; nccl takes
// them where they are.
Result<std::unique_ptr<Communicator>> MakeCommunicator(Backend backend, const Topology& topology,
                                                       Device device = Device::kCpu);

// Whether this build can make `backend` at all (before looking at the machine).
bool BackendBuilt(Backend backend);

}  // namespace lockstep
