// Shared pieces of the multi-rank benchmarks (names starting "BM_Mpi", run under mpirun by
// ci/bench.sh). Every rank runs the same benchmarks with the same fixed iteration counts, so
// collectives line up; times are the maximum over ranks (a collective costs the job what its
// slowest rank waits) and reported by rank 0.
#pragma once

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>

#include "harness/comm/mpi_communicator.h"

namespace lockstep {
namespace bench {

// World size announced by the launcher (Open MPI, PMI, PMIx), 0 when not started by one.
int LaunchedRanks();

// The world communicator shared by the BM_Mpi benchmarks, or null after skipping `state` with the
// reason (not under mpirun, fewer than `min_ranks` ranks, MPI failed).
MpiCommunicator* WorldOrSkip(benchmark::State& state, int min_ranks = 2);

// The largest `seconds` over all ranks (an MPI_Allreduce of one double, outside the timing).
double MaxOverRanks(double seconds);

// Times `fn` on every rank from a common start (a barrier); the job waits for the slowest rank,
// so the result is MaxOverRanks of each rank's time.
template <typename Fn>
double TimedOnAllRanks(Fn&& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return MaxOverRanks(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace bench
}  // namespace lockstep
