// Cost of writing one step record to a rank's trace (serialization + one write(2)), for the
// per-step overhead budget: a few hundred tensors must stay well under a millisecond.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

StepRecord MakeStep(int tensors) {
  StepRecord s;
  s.step = 7;
  s.loss = 2.0 / 3.0;
  s.grad_norm = 0.123456789;
  s.lr = 3e-4;
  s.wall_s = 12.5;
  for (int i = 0; i < tensors; ++i) {
    TensorRecord t;
    t.name = "blocks." + std::to_string(i / 12) + ".attn.qkv.weight";
    t.kind = static_cast<TensorKind>(i % 4);
    t.digest = Digest128{0x0123456789abcdefULL * (i + 1), 0xfedcba9876543210ULL ^ static_cast<uint64_t>(i)};
    t.numel = 4096;
    t.dtype = "float32";
    t.norm = 1.0 / (i + 3);
    s.tensors.push_back(t);
  }
  return s;
}

void BM_TraceWriteStep(benchmark::State& state) {
  const StepRecord step = MakeStep(static_cast<int>(state.range(0)));
  const auto path = std::filesystem::temp_directory_path() / ("lockstep-bench-" + std::to_string(::getpid()) + ".trace");
  auto writer = TraceWriter::Open(path, TraceHeader{});
  if (!writer.ok()) {
    state.SkipWithError(writer.status().ToString().c_str());
    return;
  }
  int64_t since_truncate = 0;
  for (auto _ : state) {
    if (!(*writer)->WriteStep(step).ok()) {
      state.SkipWithError("WriteStep failed");
      break;
    }
    if (++since_truncate == 2000) {
      // Keep the file (and the page cache behind it) small.
      state.PauseTiming();
      writer = TraceWriter::Open(path, TraceHeader{});
      since_truncate = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
  std::filesystem::remove(path);
}
BENCHMARK(BM_TraceWriteStep)->Arg(50)->Arg(300)->MinTime(0.2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lockstep
