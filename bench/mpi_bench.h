// Shared pieces of the multi-rank benchmarks (names starting "BM_Mpi", run under mpirun by
// ci/bench.sh). Every rank runs the same benchmarks with the same fixed iteration counts, so
// collectives line up; times are the maximum over ranks (a collective costs the job what its
// slowest rank waits) and reported by rank 0.
#pragma once

#include <benchmark/benchmark.h>

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

}  // namespace bench
}  // namespace lockstep
