// The CUDA digest against a device-to-device cudaMemcpy of the same buffer (a few GiB), on the
// GPU. x_copy is the digest's bytes/s over the copy's bytes/s (the copy moves each byte twice,
// read and write, so a digest at the memory's read speed reaches about 2x; x_copy_traffic
// compares bytes moved instead). Skips, saying why, without a GPU.
//   lockstep-bench --benchmark_filter=Cuda
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "harness/trace/cuda/cuda_digest.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

// One device buffer per size, filled once, kept for the process.
void* DeviceBuffer(size_t bytes, std::string* error) {
  static std::map<size_t, void*> buffers;
  auto it = buffers.find(bytes);
  if (it != buffers.end()) return it->second;
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaSuccess) e = cudaMemset(p, 0x5a, bytes);
  if (e != cudaSuccess) {
    *error = std::string("cudaMalloc/cudaMemset: ") + cudaGetErrorString(e);
    return nullptr;
  }
  buffers[bytes] = p;
  return p;
}

std::map<int64_t, double>& CopySeconds() {
  static std::map<int64_t, double> m;
  return m;
}

bool ReadyOrSkip(benchmark::State& state) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) {
    state.SkipWithError(("no usable CUDA device: " + why).c_str());
    return false;
  }
  return true;
}

void BM_CudaMemcpyD2D(benchmark::State& state) {
  if (!ReadyOrSkip(state)) return;
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::string error;
  void* src = DeviceBuffer(bytes, &error);
  void* dst = src ? DeviceBuffer(bytes + 1, &error) : nullptr;
  if (!dst) return state.SkipWithError(error.c_str());
  double total = 0.0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr);
    if (e == cudaSuccess) e = cudaStreamSynchronize(nullptr);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (e != cudaSuccess) return state.SkipWithError(cudaGetErrorString(e));
    state.SetIterationTime(s);
    total += s;
  }
  CopySeconds()[state.range(0)] = total / static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

void BM_CudaDigest(benchmark::State& state) {
  if (!ReadyOrSkip(state)) return;
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::string error;
  void* buf = DeviceBuffer(bytes, &error);
  if (!buf) return state.SkipWithError(error.c_str());
  const std::vector<int64_t> shape = {static_cast<int64_t>(bytes)};
  double total = 0.0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    Result<Digest128> d = DigestDeviceBuffer(buf, bytes, "uint8", shape, nullptr);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!d.ok()) return state.SkipWithError(d.status().ToString().c_str());
    benchmark::DoNotOptimize(d);
    state.SetIterationTime(s);
    total += s;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  auto it = CopySeconds().find(state.range(0));
  if (it != CopySeconds().end() && total > 0) {
    const double digest_s = total / static_cast<double>(state.iterations());
    state.counters["x_copy"] = it->second / digest_s;
    state.counters["x_copy_traffic"] = it->second / (2.0 * digest_s);
  }
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgName("bytes")->Arg(int64_t{1} << 30)->Arg(int64_t{4} << 30);
  b->MinTime(0.3)->UseManualTime()->Unit(benchmark::kMillisecond);
}

// Registration order is run order: each copy runs before the digest it is compared with.
BENCHMARK(BM_CudaMemcpyD2D)->Apply(Sizes);
BENCHMARK(BM_CudaDigest)->Apply(Sizes);

}  // namespace
}  // namespace lockstep
