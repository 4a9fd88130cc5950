#include "harness/comm/communicator_factory.h"

#include <cstdlib>
#include <utility>

#include "harness/comm/host_staging_communicator.h"
#include "harness/comm/mpi_communicator.h"
#include "harness/comm/rendezvous_options.h"
#if LOCKSTEP_HAVE_GLOO
#include "harness/comm/gloo_communicator.h"
#endif
#if LOCKSTEP_HAVE_NCCL
#include "harness/comm/nccl_communicator.h"
#endif

namespace lockstep {
namespace {

// The world MPI sees must be the one discovery read from the launcher's variables; a mismatch
// (plain srun under Open MPI 5 starts N singletons) would otherwise train N separate models.
Status CheckWorld(const Communicator& comm, const Topology& topology, const char* what) {
  if (comm.size() != topology.world_size || comm.rank() != topology.rank) {
    return InvalidArgumentError(std::string(what) + " sees rank " + std::to_string(comm.rank()) + " of " +
                                std::to_string(comm.size()) + " but the launcher's environment (" + topology.source +
                                ") says rank " + std::to_string(topology.rank) + " of " +
                                std::to_string(topology.world_size));
  }
  return Status::Ok();
}

bool StoreNamed() {
  const char* file = std::getenv("LOCKSTEP_STORE_FILE");
  return (file != nullptr && *file != '\0') || (std::getenv("MASTER_ADDR") != nullptr && std::getenv("MASTER_PORT") != nullptr);
}

}  // namespace

bool BackendBuilt(Backend backend) {
  switch (backend) {
    case Backend::kMpi: return true;
    case Backend::kGloo: return LOCKSTEP_HAVE_GLOO != 0;
    case Backend::kNccl: return LOCKSTEP_HAVE_NCCL != 0;
  }
  return false;
}

Result<std::unique_ptr<Communicator>> MakeCommunicator(Backend backend, const Topology& topology, Device device) {
  // mpi and gloo move host memory only; tensors on a device go through host copies.
  auto on_host = [device](std::unique_ptr<Communicator> comm) -> std::unique_ptr<Communicator> {
    if (device == Device::kCpu) return comm;
    return std::make_unique<HostStagingCommunicator>(std::move(comm));
  };
  switch (backend) {
    case Backend::kMpi: {
      LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> comm, MpiCommunicator::CreateWorld());
      LOCKSTEP_RETURN_IF_ERROR(CheckWorld(*comm, topology, "MPI_COMM_WORLD"));
      return on_host(std::move(comm));
    }
    case Backend::kGloo: {
#if LOCKSTEP_HAVE_GLOO
      LOCKSTEP_ASSIGN_OR_RETURN(RendezvousOptions options,
                                RendezvousOptions::FromEnvironment(topology.rank, topology.world_size));
      LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<GlooCommunicator> comm, GlooCommunicator::Create(options));
      return on_host(std::move(comm));
#else
      return UnavailableError("the gloo backend is not built (gloo headers were not found: install libgloo-dev)");
#endif
    }
    case Backend::kNccl: {
#if LOCKSTEP_HAVE_NCCL
      if (topology.cuda_device < 0) {
        return UnavailableError("the nccl backend needs a CUDA device; none is visible to rank " +
                                std::to_string(topology.rank));
      }
      if (StoreNamed()) {
        LOCKSTEP_ASSIGN_OR_RETURN(RendezvousOptions options,
                                  RendezvousOptions::FromEnvironment(topology.rank, topology.world_size));
        LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> comm,
                                  NcclCommunicator::CreateOverStore(options, topology.cuda_device));
        return std::unique_ptr<Communicator>(std::move(comm));
      }
      LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> mpi, MpiCommunicator::CreateWorld());
      LOCKSTEP_RETURN_IF_ERROR(CheckWorld(*mpi, topology, "MPI_COMM_WORLD"));
      LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> comm,
                                NcclCommunicator::CreateOverMpi(*mpi, topology.cuda_device));
      return std::unique_ptr<Communicator>(std::move(comm));
#else
      return UnavailableError("the nccl backend is not built (CUDA and NCCL were not found at configure time)");
#endif
    }
  }
  return InvalidArgumentError("unknown backend");
}

}  // namespace lockstep
