// The replica check of nanotron (assert_tensor_synced_across_pg): rank 0 broadcasts the whole
// tensor and every rank compares it with its own, against lockstep's way: each rank digests its
// tensor and the ranks all-gather 16 bytes. Both in one benchmark, alternately, on the same
// buffer; x_nanotron is nanotron's time over lockstep's.
//   mpirun -np 2 lockstep-bench --benchmark_filter=Nanotron
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench/median.h"
#include "bench/mpi_bench.h"
#include "harness/trace/digest.h"

namespace lockstep {
namespace {

void BM_MpiNanotronVsDigest(benchmark::State& state) {
  MpiCommunicator* world = bench::WorldOrSkip(state);
  if (!world) return;
  const int64_t bytes = state.range(0);
  const int64_t n = bytes / static_cast<int64_t>(sizeof(float));
  // The same values on every rank: a clean run, where both checks must find nothing.
  torch::Tensor param = torch::arange(n, torch::kFloat32).remainder_(9973.0f);
  torch::Tensor received = torch::empty_like(param);
  const std::vector<int64_t> shape = {n};
  torch::Tensor mine = torch::empty({2}, torch::kInt64);
  torch::Tensor all = torch::empty({2 * world->size()}, torch::kInt64);
  std::vector<double> nanotron, digest;
  bool mismatch = false;
  for (auto _ : state) {
    nanotron.push_back(bench::TimedOnAllRanks([&] {
      torch::Tensor& ref = world->rank() == 0 ? param : received;
      if (!world->Broadcast(ref, 0).ok()) MPI_Abort(MPI_COMM_WORLD, 3);
      // torch.testing.assert_close with rtol=atol=0 is at least a full compare; memcmp is the
      // cheapest form of it, which flatters the baseline.
      if (world->rank() != 0 && std::memcmp(param.data_ptr(), received.data_ptr(), bytes) != 0) mismatch = true;
    }));
    digest.push_back(bench::TimedOnAllRanks([&] {
      const Digest128 d = DigestBytes(param.data_ptr(), static_cast<size_t>(bytes), "float32", shape);
      mine.data_ptr<int64_t>()[0] = static_cast<int64_t>(d.high);
      mine.data_ptr<int64_t>()[1] = static_cast<int64_t>(d.low);
      if (!world->AllGather(mine, all).ok()) MPI_Abort(MPI_COMM_WORLD, 3);
      auto a = all.accessor<int64_t, 1>();
      for (int r = 1; r < world->size(); ++r) mismatch |= a[2 * r] != a[0] || a[2 * r + 1] != a[1];
    }));
    state.SetIterationTime(digest.back());
  }
  if (mismatch) state.SkipWithError("replicas reported different in a clean run");
  const double nanotron_s = bench::Median(nanotron), digest_s = bench::Median(digest);
  state.counters["nanotron_ms"] = nanotron_s * 1e3;
  state.counters["lockstep_ms"] = digest_s * 1e3;
  state.counters["x_nanotron"] = digest_s > 0 ? nanotron_s / digest_s : 0.0;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
}

void Register() {
  // Fixed iterations per size: every rank must run the same number of collectives.
  for (auto [mib, iterations] : {std::pair<int64_t, int64_t>{1, 60}, {64, 8}, {256, 3}}) {
    benchmark::RegisterBenchmark("BM_MpiNanotronVsDigest", BM_MpiNanotronVsDigest)
        ->ArgName("bytes")
        ->Arg(mib << 20)
        ->Iterations(iterations)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}
[[maybe_unused]] const bool kRegistered = (Register(), true);

}  // namespace
}  // namespace lockstep
