// What lockstep's NCCL profiler plugin adds to each NCCL collective on the host, before a GPU
// measures it inside NCCL (ci/gpu-checks.sh, check nccl_plugin): the recorder path NCCL's
// callbacks take (nccl_profiler_recorder.h: the collective's start, one start and stop per
// kernel channel, its stop, the begin and end through the shared process log into a trace) against
// the baseline every traced collective already pays, the same begin and end records written
// straight to the trace (what RecordingCommunicator and the probe do), paired in each iteration.
// Counters (medians): plugin_us, direct_us, and x_direct = plugin_us / direct_us.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/median.h"
#include "harness/discovery/discovery_log.h"
#include "harness/discovery/native_collective_log.h"
#include "harness/discovery/native_collective_trace_writer.h"
#include "harness/nccl_profiler/nccl_profiler_recorder.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

void BM_NcclProfilerCollective(benchmark::State& state) {
  const int channels = static_cast<int>(state.range(0));
  const auto path =
      std::filesystem::temp_directory_path() / ("lockstep-bench-nccl-" + std::to_string(::getpid()) + ".trace");
  auto writer = TraceWriter::Open(path, TraceHeader{});
  if (!writer.ok()) {
    state.SkipWithError(writer.status().ToString().c_str());
    return;
  }
  ResetDiscoveryForTest();
  ResetNativeCollectivesForTest();
  SetNativeCollectiveObserver(std::make_shared<NativeCollectiveTraceWriter>(
      writer.value().get(), [] { return 1.0; }, [] { return int64_t{3}; }));
  nccl_profiler::CommProfile* comm = nccl_profiler::OpenCommunicator(0x1234abcd5678ef90ULL, "bench", 8);
  nccl_profiler::CollectiveStart start;
  start.func = "AllReduce";
  start.datatype = "ncclFloat32";
  start.count = 25'000'000;
  start.channels = channels;
  CollectiveRecord direct;
  direct.group = "world";
  direct.op = "all_reduce";
  direct.dtype = "float32";
  direct.count = 25'000'000;
  direct.reduce = "sum";
  std::vector<double> plugin_s, direct_s;
  std::vector<void*> kernel(static_cast<size_t>(channels));
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    void* coll = nccl_profiler::StartCollective(comm, start);
    for (void*& k : kernel) k = nccl_profiler::StartKernelChannel(coll);
    nccl_profiler::StopEvent(coll);  // NCCL stops the collective at enqueue, before its channels end
    for (void* k : kernel) nccl_profiler::StopEvent(k);
    auto t1 = std::chrono::steady_clock::now();
    Status begun = writer.value()->WriteCollectiveBegin(direct);
    Status ended = writer.value()->WriteCollectiveEnd(direct.group, direct.seq++, 2.0);
    auto t2 = std::chrono::steady_clock::now();
    if (!begun.ok() || !ended.ok()) {
      state.SkipWithError("writing the trace failed");
      break;
    }
    plugin_s.push_back(Seconds(t1 - t0));
    direct_s.push_back(Seconds(t2 - t1));
  }
  nccl_profiler::CloseCommunicator(comm);
  SetNativeCollectiveObserver(nullptr);
  ResetDiscoveryForTest();
  const double plugin_us = 1e6 * bench::Median(plugin_s);
  const double direct_us = 1e6 * bench::Median(direct_s);
  state.counters["plugin_us"] = plugin_us;
  state.counters["direct_us"] = direct_us;
  state.counters["x_direct"] = direct_us > 0 ? plugin_us / direct_us : 0.0;
  writer.value().reset();
  std::filesystem::remove(path);
}
// 2 channels: a small collective; 32: a large one on an H100 node (one KernelCh event each).
BENCHMARK(BM_NcclProfilerCollective)->Arg(2)->Arg(32)->MinTime(0.2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lockstep
