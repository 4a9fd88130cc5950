// lockstep's AllReduce against a raw MPI_Allreduce on the same bytes (float32 sum, in place),
// alternately in one benchmark per size: raw on its own duplicate of MPI_COMM_WORLD, the mpi
// communicator (argument checks, error mapping), and the communicator as ranks use it, under a
// RecordingCommunicator whose listener writes collective_begin/end records to a trace.
// Bandwidths as nccl-tests reports them: algbw = bytes / time, busbw = algbw * 2(n-1)/n.
//   mpirun -np 2 lockstep-bench --benchmark_filter=AllReduce
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <torch/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/median.h"
#include "bench/mpi_bench.h"
#include "harness/comm/recording_communicator.h"
#include "harness/rank/step_recorder.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

// nccl-tests' all-reduce bus bandwidth factor.
double BusFactor(int ranks) { return 2.0 * (ranks - 1) / ranks; }

void BM_MpiAllReduce(benchmark::State& state) {
  MpiCommunicator* world = bench::WorldOrSkip(state);
  if (!world) return;
  const int64_t bytes = state.range(0);
  const int64_t n = bytes / static_cast<int64_t>(sizeof(float));

  MPI_Comm raw_comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw_comm);
  auto plain = MpiCommunicator::CreateWorld();
  auto inner = MpiCommunicator::CreateWorld();
  if (!plain.ok() || !inner.ok()) return state.SkipWithError("MPI_Comm_dup failed");
  const auto trace = std::filesystem::temp_directory_path() /
                     ("lockstep-bench-allreduce-" + std::to_string(::getpid()) + ".trace");
  auto writer = TraceWriter::Open(trace, TraceHeader{});
  if (!writer.ok()) return state.SkipWithError(writer.status().ToString().c_str());
  StepRecorder recorder(writer->get());
  RecordingCommunicator recording(std::move(inner).value(), &recorder, nullptr);

  // Small integers: sums stay exact and finite however many iterations run.
  torch::Tensor raw_buf = torch::ones({n}, torch::kFloat32);
  torch::Tensor plain_buf = torch::ones({n}, torch::kFloat32);
  torch::Tensor rec_buf = torch::ones({n}, torch::kFloat32);
  std::vector<double> raw, lockstep, recorded;
  bool failed = false;
  // Each variant refills its buffer right before it runs (untimed), so all three start from the
  // same cache state, and the order rotates every iteration so that none always goes first.
  auto run_raw = [&] {
    raw_buf.fill_(1.0f);
    raw.push_back(bench::TimedOnAllRanks([&] {
      failed |= MPI_Allreduce(MPI_IN_PLACE, raw_buf.data_ptr(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, raw_comm) !=
                MPI_SUCCESS;
    }));
  };
  auto run_lockstep = [&] {
    plain_buf.fill_(1.0f);
    lockstep.push_back(bench::TimedOnAllRanks([&] { failed |= !(*plain)->AllReduce(plain_buf, ReduceOp::kSum).ok(); }));
  };
  auto run_recorded = [&] {
    rec_buf.fill_(1.0f);
    recorded.push_back(bench::TimedOnAllRanks([&] { failed |= !recording.AllReduce(rec_buf, ReduceOp::kSum).ok(); }));
  };
  int64_t i = 0;
  for (auto _ : state) {
    switch (i++ % 3) {
      case 0: run_raw(); run_lockstep(); run_recorded(); break;
      case 1: run_lockstep(); run_recorded(); run_raw(); break;
      default: run_recorded(); run_raw(); run_lockstep(); break;
    }
    state.SetIterationTime(lockstep.back());
  }
  MPI_Comm_free(&raw_comm);
  std::filesystem::remove(trace);
  if (failed) return state.SkipWithError("an all-reduce failed");
  if (!torch::equal(raw_buf, plain_buf) || !torch::equal(raw_buf, rec_buf)) {
    return state.SkipWithError("lockstep's all-reduce result differs from MPI_Allreduce's");
  }

  const double raw_s = bench::Median(raw), lockstep_s = bench::Median(lockstep), recorded_s = bench::Median(recorded);
  const double bus = BusFactor(world->size());
  state.counters["raw_ms"] = raw_s * 1e3;
  state.counters["lockstep_ms"] = lockstep_s * 1e3;
  state.counters["recorded_ms"] = recorded_s * 1e3;
  state.counters["busbw_raw_GBps"] = static_cast<double>(bytes) / raw_s * bus / 1e9;
  state.counters["busbw_GBps"] = static_cast<double>(bytes) / lockstep_s * bus / 1e9;
  state.counters["algbw_GBps"] = static_cast<double>(bytes) / lockstep_s / 1e9;
  // Speed relative to raw MPI (1 = as fast; the target is >= 0.95).
  state.counters["x_raw"] = raw_s / lockstep_s;
  state.counters["x_raw_recorded"] = raw_s / recorded_s;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
}

void Register() {
  // Fixed iterations per size (ranks must agree); the small sizes need many for a stable median.
  for (auto [bytes, iterations] : {std::pair<int64_t, int64_t>{4 << 10, 900},
                                   {256 << 10, 300},
                                   {4 << 20, 60},
                                   {64 << 20, 18}}) {
    benchmark::RegisterBenchmark("BM_MpiAllReduce", BM_MpiAllReduce)
        ->ArgName("bytes")
        ->Arg(bytes)
        ->Iterations(iterations)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}
[[maybe_unused]] const bool kRegistered = (Register(), true);

}  // namespace
}  // namespace lockstep
