#include "bench/mpi_bench.h"

#include <mpi.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace lockstep {
namespace bench {

int LaunchedRanks() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

MpiCommunicator* WorldOrSkip(benchmark::State& state, int min_ranks) {
  if (LaunchedRanks() < min_ranks) {
    state.SkipWithError(("needs mpirun -np " + std::to_string(min_ranks) + " or more (ci/bench.sh runs it so)").c_str());
    return nullptr;
  }
  // Created on first use and kept: the communicator must go before MpiSession finalizes MPI,
  // which static destruction order guarantees (the session was created first).
  static Result<std::unique_ptr<MpiCommunicator>> world = MpiCommunicator::CreateWorld();
  if (!world.ok()) {
    state.SkipWithError(world.status().ToString().c_str());
    return nullptr;
  }
  return world.value().get();
}

double MaxOverRanks(double seconds) {
  double max = seconds;
  MPI_Allreduce(&seconds, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return max;
}

}  // namespace bench
}  // namespace lockstep
