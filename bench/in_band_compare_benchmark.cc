// The in-band comparison (`--compare in-band`, `--fail-fast`) alone, on a synthetic step of N
// replicated tensors, so that what grows with tensors and with ranks shows without a trainer's
// noise:
//   agree     every step's path: one digest over the N tensor digests, 16 bytes a rank
//             all-gathered, compared. The gather does not grow with N; the local combine does,
//             by 16 bytes of XXH3 a tensor.
//   mismatch  the one-time path at the divergent step: the count, then the tables (32 bytes a
//             tensor a rank) all-gathered, and the replica checkers run on them. Grows with
//             tensors x ranks, once per run.
// Counters: us (median, slowest rank, from a common start), combine_us (the local digest over the
// tensor digests alone, the same way), gather_bytes_per_rank.
//   mpirun -np 2 lockstep-bench --benchmark_filter=MpiInBandCompare
//   mpirun -np 4 --oversubscribe lockstep-bench --benchmark_filter=MpiInBandCompare
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench/median.h"
#include "bench/mpi_bench.h"
#include "harness/rank/replica_exchange.h"
#include "harness/rank/step_recorder.h"

namespace lockstep {
namespace {

// One step of `n` replicated parameters; rank 1's first one differs when `mismatch`.
StepRecord SyntheticStep(int64_t n, int rank, bool mismatch) {
  StepRecord s;
  s.step = 7;
  for (int64_t i = 0; i < n; ++i) {
    TensorRecord t;
    t.name = "blocks." + std::to_string(i / 8) + ".tensor" + std::to_string(i % 8) + ".weight";
    t.kind = TensorKind::kParam;
    t.digest = Digest128{static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL + 1, static_cast<uint64_t>(i)};
    if (mismatch && rank == 1 && i == 0) t.digest.low ^= 1;
    t.numel = 1024;
    t.dtype = "float32";
    t.norm = 1.0 + static_cast<double>(i);
    s.tensors.push_back(std::move(t));
  }
  return s;
}

void BM_MpiInBandCompare(benchmark::State& state, bool mismatch) {
  MpiCommunicator* world = bench::WorldOrSkip(state);
  if (!world) return;
  const int64_t n = state.range(0);
  const StepRecord record = SyntheticStep(n, world->rank(), mismatch);
  const Scenario scenario;
  std::vector<double> times, combine;
  for (auto _ : state) {
    // The local part alone: the digest over the tensor digests (no communication).
    combine.push_back(bench::TimedOnAllRanks([&] { benchmark::DoNotOptimize(StepDigest(record)); }));
    Result<std::vector<Finding>> findings = std::vector<Finding>{};
    const double seconds = bench::TimedOnAllRanks(
        [&] { findings = CompareStepInBand(*world, torch::Device(torch::kCPU), scenario, record); });
    if (!findings.ok() || findings->empty() != !mismatch) {
      std::fprintf(stderr, "MpiInBandCompare: %s\n",
                   findings.ok() ? "unexpected verdict" : findings.status().ToString().c_str());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    times.push_back(seconds);
    state.SetIterationTime(seconds);
  }
  state.counters["us"] = bench::Median(times) * 1e6;
  state.counters["combine_us"] = bench::Median(combine) * 1e6;
  state.counters["ranks"] = world->size();
  state.counters["tensors"] = static_cast<double>(n);
  state.counters["gather_bytes_per_rank"] = mismatch ? 16.0 + 8.0 + 32.0 * static_cast<double>(n) : 16.0;
}

// 308: the default transformer with AdamW; 3080 and 30800: 10x and 100x the tensors.
BENCHMARK_CAPTURE(BM_MpiInBandCompare, agree, false)
    ->Arg(308)->Arg(3080)->Arg(30800)->Iterations(200)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MpiInBandCompare, mismatch, true)
    ->Arg(308)->Arg(3080)->Arg(30800)->Iterations(10)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lockstep
