// A list of many small CPU tensors captured in one pass (MultiTensorDigest: digests and norms), per
// dtype, against one read of the same bytes in the same iteration: what a step of a model with
// many small tensors costs in float32, in the 16-bit types mixed-precision programs keep (the
// probe captures such lists under `lockstep exec`), and in int64 (buffers: step counters, ids).
// The CUDA counterpart is BM_CudaCapture (bench/cuda_digest_benchmark.cc). Counters: capture_us
// and us_per_tensor (medians), x_read (the median of capture over read, paired per iteration). Run:
//   <build>/bin/lockstep-bench --benchmark_filter=CaptureList
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/median.h"
#include "harness/capture/dtype_name.h"
#include "harness/capture/multi_tensor_digest.h"
#include "harness/trace/read_yardstick.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// `count` tensors of `dtype` as views of one flat buffer, sizes cycling from 2 KiB to 32 KiB in
// 16-byte steps (a layer norm's to a small projection's), values of a normal distribution.
std::vector<torch::Tensor> SmallTensors(torch::ScalarType dtype, int64_t count, torch::Tensor& flat) {
  const int64_t item = torch::elementSize(dtype);
  std::vector<int64_t> numels;
  int64_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t bytes = (2 << 10) + (i * 7919 % ((30 << 10) / 16 + 1)) * 16;
    numels.push_back(bytes / item);
    total += bytes / item;
  }
  flat = torch::randn({total}, torch::TensorOptions().dtype(torch::kFloat32)).to(dtype);
  std::vector<torch::Tensor> tensors;
  int64_t at = 0;
  for (const int64_t n : numels) {
    tensors.push_back(flat.narrow(0, at, n));
    at += n;
  }
  return tensors;
}

void BM_CaptureList(benchmark::State& state) {
  torch::set_num_threads(1);  // as lockstep-rank and the probe's ranks
  const torch::ScalarType dtype = state.range(0) == 0   ? torch::kFloat32
                                  : state.range(0) == 1 ? torch::kBFloat16
                                  : state.range(0) == 2 ? torch::kFloat16
                                                        : torch::kInt64;
  torch::Tensor flat;
  const std::vector<torch::Tensor> tensors = SmallTensors(dtype, 1024, flat);
  const auto* bytes = static_cast<const unsigned char*>(flat.const_data_ptr());
  const size_t nbytes = static_cast<size_t>(flat.numel()) * flat.element_size();
  MultiTensorDigest m;
  std::vector<double> capture, ratio;
  for (auto _ : state) {
    auto t0 = Clock::now();
    benchmark::DoNotOptimize(SumBytesAsWords(bytes, nbytes));
    const double read = Since(t0);
    t0 = Clock::now();
    m.Clear();
    for (const torch::Tensor& t : tensors) m.Add(t);
    const Status s = m.Run();
    capture.push_back(Since(t0));
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(m.norm(0));
    state.SetIterationTime(capture.back());
    if (read > 0) ratio.push_back(capture.back() / read);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(nbytes));
  state.SetLabel(std::to_string(tensors.size()) + " " + DtypeName(dtype) + " tensors, " +
                 std::to_string(nbytes >> 10) + " KiB");
  state.counters["capture_us"] = bench::Median(capture) * 1e6;
  state.counters["us_per_tensor"] = bench::Median(capture) * 1e6 / static_cast<double>(tensors.size());
  state.counters["x_read"] = bench::Median(ratio);
}
BENCHMARK(BM_CaptureList)
    ->ArgName("dtype")  // 0 float32, 1 bfloat16, 2 float16, 3 int64
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->MinTime(0.3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lockstep
