#include "harness/topology/topology.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <utility>

#include "harness/discovery/discovery_log.h"

#if LOCKSTEP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace lockstep {
namespace {

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Result<int> ParseInt(const char* name, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || *end != '\0' || errno == ERANGE || value < INT_MIN ||
      value > INT_MAX) {
    return InvalidArgumentError(std::string(name) + "='" + text + "' is not an integer");
  }
  return static_cast<int>(value);
}

// The variable as an int, `fallback` when it is not set.
Result<int> EnvInt(const char* name, int fallback) {
  std::optional<std::string> text = Env(name);
  if (!text) return fallback;
  return ParseInt(name, *text);
}

// Slurm's compressed task counts per node, "3(x2),1" -> {3, 3, 1}.
Result<std::vector<int>> ParseSlurmTaskList(const char* name, const std::string& text) {
  std::vector<int> counts;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() : comma + 1;
    int repeat = 1;
    size_t paren = item.find("(x");
    if (paren != std::string::npos) {
      if (item.back() != ')') return InvalidArgumentError(std::string(name) + "='" + text + "' is malformed");
      LOCKSTEP_ASSIGN_OR_RETURN(repeat, ParseInt(name, item.substr(paren + 2, item.size() - paren - 3)));
      item = item.substr(0, paren);
    }
    LOCKSTEP_ASSIGN_OR_RETURN(int count, ParseInt(name, item));
    for (int i = 0; i < repeat; ++i) counts.push_back(count);
  }
  if (counts.empty()) return InvalidArgumentError(std::string(name) + " is empty");
  return counts;
}

// Tasks on this node under Slurm: SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE) indexed by
// SLURM_NODEID; `fallback` when Slurm does not say.
Result<int> SlurmLocalSize(int fallback) {
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    std::optional<std::string> text = Env(name);
    if (!text) continue;
    LOCKSTEP_ASSIGN_OR_RETURN(std::vector<int> counts, ParseSlurmTaskList(name, *text));
    LOCKSTEP_ASSIGN_OR_RETURN(int node, EnvInt("SLURM_NODEID", 0));
    if (node < 0 || node >= static_cast<int>(counts.size())) {
      return InvalidArgumentError("SLURM_NODEID=" + std::to_string(node) + " is outside " + name + "='" + *text +
                                  "'");
    }
    return counts[node];
  }
  return fallback;
}

struct Identity {
  std::string source = "single";
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
};

Result<Identity> ReadIdentity() {
  Identity id;
  if (Env("RANK") && Env("WORLD_SIZE")) {
    id.source = "torchrun";
    LOCKSTEP_ASSIGN_OR_RETURN(id.rank, EnvInt("RANK", 0));
    LOCKSTEP_ASSIGN_OR_RETURN(id.world_size, EnvInt("WORLD_SIZE", 1));
    // Without the local variables every rank is taken to share one host.
    LOCKSTEP_ASSIGN_OR_RETURN(id.local_rank, EnvInt("LOCAL_RANK", id.rank));
    LOCKSTEP_ASSIGN_OR_RETURN(id.local_world_size, EnvInt("LOCAL_WORLD_SIZE", id.world_size));
  } else if (Env("OMPI_COMM_WORLD_RANK") && Env("OMPI_COMM_WORLD_SIZE")) {
    id.source = "openmpi";
    LOCKSTEP_ASSIGN_OR_RETURN(id.rank, EnvInt("OMPI_COMM_WORLD_RANK", 0));
    LOCKSTEP_ASSIGN_OR_RETURN(id.world_size, EnvInt("OMPI_COMM_WORLD_SIZE", 1));
    LOCKSTEP_ASSIGN_OR_RETURN(id.local_rank, EnvInt("OMPI_COMM_WORLD_LOCAL_RANK", id.rank));
    LOCKSTEP_ASSIGN_OR_RETURN(id.local_world_size, EnvInt("OMPI_COMM_WORLD_LOCAL_SIZE", id.world_size));
  } else if (Env("PMIX_RANK")) {
    // PMIx exports the rank but not the size; under srun --mpi=pmix Slurm has it.
    id.source = "pmix";
    LOCKSTEP_ASSIGN_OR_RETURN(id.rank, EnvInt("PMIX_RANK", 0));
    LOCKSTEP_ASSIGN_OR_RETURN(id.world_size, EnvInt("SLURM_NTASKS", -1));
    if (id.world_size == -1) {
      LOCKSTEP_ASSIGN_OR_RETURN(id.world_size, EnvInt("SLURM_NPROCS", -1));
    }
    if (id.world_size == -1) {
      return InvalidArgumentError("PMIX_RANK is set but the world size is not (SLURM_NTASKS or SLURM_NPROCS)");
    }
    LOCKSTEP_ASSIGN_OR_RETURN(id.local_rank, EnvInt("SLURM_LOCALID", id.rank));
    LOCKSTEP_ASSIGN_OR_RETURN(id.local_world_size, SlurmLocalSize(id.world_size));
  } else if (Env("SLURM_PROCID") && (Env("SLURM_NTASKS") || Env("SLURM_NPROCS"))) {
    id.source = "slurm";
    LOCKSTEP_ASSIGN_OR_RETURN(id.rank, EnvInt("SLURM_PROCID", 0));
    LOCKSTEP_ASSIGN_OR_RETURN(id.world_size, EnvInt(Env("SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS", 1));
    LOCKSTEP_ASSIGN_OR_RETURN(id.local_rank, EnvInt("SLURM_LOCALID", id.rank));
    LOCKSTEP_ASSIGN_OR_RETURN(id.local_world_size, SlurmLocalSize(id.world_size));
  }
  if (id.world_size < 1) {
    return InvalidArgumentError(id.source + ": world size " + std::to_string(id.world_size) + " must be >= 1");
  }
  if (id.rank < 0 || id.rank >= id.world_size) {
    return InvalidArgumentError(id.source + ": rank " + std::to_string(id.rank) + " is outside a world of " +
                                std::to_string(id.world_size));
  }
  if (id.local_world_size < 1 || id.local_world_size > id.world_size) {
    return InvalidArgumentError(id.source + ": local world size " + std::to_string(id.local_world_size) +
                                " does not fit a world of " + std::to_string(id.world_size));
  }
  if (id.local_rank < 0 || id.local_rank >= id.local_world_size) {
    return InvalidArgumentError(id.source + ": local rank " + std::to_string(id.local_rank) +
                                " is outside a local world of " + std::to_string(id.local_world_size));
  }
  return id;
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

int CudaDeviceCount() {
#if LOCKSTEP_HAVE_CUDA
  int count = 0;
  // No driver, no device or a driver too old all mean: run on the CPU.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error for later CUDA users
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

}  // namespace

Result<std::string> Topology::DeviceFor(Device device) const {
  if (device == Device::kCpu) return std::string("cpu");
  if (cuda_device < 0) {
    return UnavailableError(std::string("device cuda: no CUDA device is visible to rank ") + std::to_string(rank) +
                            (LOCKSTEP_HAVE_CUDA ? " (no driver or GPU, or CUDA_VISIBLE_DEVICES hides them all)"
                                                : " (this build has no CUDA: configure with the CUDA toolkit)"));
  }
  return "cuda:" + std::to_string(cuda_device);
}

Result<Topology> DiscoverTopology(int slices, const std::string& phase, int64_t step) {
  RecordDiscoveryAt(kTopologyDiscovery, phase, step);
  LOCKSTEP_ASSIGN_OR_RETURN(Identity id, ReadIdentity());
  if (slices < 1) return InvalidArgumentError("slices must be >= 1, got " + std::to_string(slices));
  if (id.world_size % slices != 0) {
    return InvalidArgumentError("a world of " + std::to_string(id.world_size) + " ranks does not split into " +
                                std::to_string(slices) + " slices of equal size");
  }
  Topology topo;
  topo.source = id.source;
  topo.world_size = id.world_size;
  topo.rank = id.rank;
  topo.local_rank = id.local_rank;
  topo.local_world_size = id.local_world_size;
  topo.host = HostName();
  topo.slices = slices;
  topo.slice_size = id.world_size / slices;
  topo.slice = id.rank / topo.slice_size;
  topo.slice_rank = id.rank % topo.slice_size;
  for (int r = 0; r < topo.slice_size; ++r) topo.slice_peers.push_back(topo.slice * topo.slice_size + r);
  for (int s = 0; s < slices; ++s) topo.cross_peers.push_back(s * topo.slice_size + topo.slice_rank);
  topo.cuda_device_count = CudaDeviceCount();
  topo.cuda_device = topo.cuda_device_count > 0 ? topo.local_rank % topo.cuda_device_count : -1;
  return topo;
}

}  // namespace lockstep
