// The CUDA digest against a device-to-device cudaMemcpy of the same buffer (a few GiB), on the
// GPU. x_copy is the digest's bytes/s over the copy's bytes/s (the copy moves each byte twice,
// read and write, so a digest at the memory's read speed reaches about 2x; x_copy_traffic
// compares bytes moved instead). Skips, saying why, without a GPU.
//
// BM_CudaCapture is a step's capture of CUDA tensors (MultiTensorDigest: every digest in one
// kernel launch, every norm read with one copy) over many small tensors (1024 of 4-64 KiB, 33 MiB;
// float32, and bfloat16 as a mixed-precision model keeps them) and a few large ones (8 of 128 MiB),
// against one device-to-device copy of the same bytes
// (x_copy, as above) and against the per-tensor path (DigestTensor and TensorL2Norm each: a launch,
// a copy and a synchronization per tensor and per norm; x_per_tensor > 1 is the batch's gain).
// BM_CudaSquareSums is the norms' kernel alone, against a copy of the same bytes.
//   lockstep-bench --benchmark_filter=Cuda
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "bench/median.h"
#include "harness/capture/cuda/cuda_digest.h"
#include "harness/capture/multi_tensor_digest.h"
#include "harness/capture/tensor_digest.h"

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

// Seconds of one device-to-device copy of `bytes` bytes on the legacy default stream, waited for;
// -1 with `error` set on a CUDA error.
double TimeDeviceCopy(void* dst, const void* src, size_t bytes, std::string* error) {
  const auto t0 = Clock::now();
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr);
  if (e == cudaSuccess) e = cudaStreamSynchronize(nullptr);
  if (e != cudaSuccess) {
    *error = cudaGetErrorString(e);
    return -1.0;
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
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
    const double s = TimeDeviceCopy(dst, src, bytes, &error);
    if (s < 0) return state.SkipWithError(error.c_str());
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

// `count` tensors of `dtype` as views of one flat device buffer (so one copy of the buffer moves
// exactly their bytes), sizes cycling from `min_bytes` up to `max_bytes` in 16-byte steps.
struct TensorList {
  torch::Tensor flat;
  std::vector<torch::Tensor> tensors;
};
TensorList MakeTensorList(int64_t count, int64_t min_bytes, int64_t max_bytes,
                          torch::ScalarType dtype = torch::kFloat32) {
  const int64_t item = torch::elementSize(dtype);
  std::vector<int64_t> numels;
  int64_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t span = (max_bytes - min_bytes) / 16;
    const int64_t bytes = min_bytes + (span > 0 ? (i * 7919 % (span + 1)) * 16 : 0);
    numels.push_back(bytes / item);
    total += bytes / item;
  }
  TensorList list;
  list.flat = torch::randn({total}, torch::kCUDA).to(dtype);
  int64_t at = 0;
  for (int64_t n : numels) {
    list.tensors.push_back(list.flat.narrow(0, at, n));
    at += n;
  }
  return list;
}

constexpr size_t kPerTensorSamples = 7;

void BM_CudaCapture(benchmark::State& state) {
  if (!ReadyOrSkip(state)) return;
  if (!torch::cuda::is_available()) return state.SkipWithError("this LibTorch has no CUDA");
  // list 0: 1024 small float32 tensors; 1: 8 large ones; 2: 1024 small bfloat16 ones (a
  // mixed-precision model's: their norms in the same launch since 2026-11-29).
  const TensorList list = state.range(0) == 0   ? MakeTensorList(1024, 4 << 10, 64 << 10)
                          : state.range(0) == 1 ? MakeTensorList(8, 128 << 20, 128 << 20)
                                                : MakeTensorList(1024, 4 << 10, 64 << 10, torch::kBFloat16);
  const size_t bytes = static_cast<size_t>(list.flat.numel()) * list.flat.element_size();
  torch::Tensor copy = torch::empty_like(list.flat);
  torch::cuda::synchronize();
  MultiTensorDigest m;
  std::vector<double> capture, copied, per_tensor;
  for (auto _ : state) {
    auto t0 = Clock::now();
    m.Clear();
    for (const torch::Tensor& t : list.tensors) m.Add(t);
    const Status s = m.Run();
    capture.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
    state.SetIterationTime(capture.back());

    std::string error;
    copied.push_back(TimeDeviceCopy(copy.data_ptr(), list.flat.data_ptr(), bytes, &error));
    if (copied.back() < 0) return state.SkipWithError(error.c_str());

    // The per-tensor path is the slow reference (75 ms for the 1024 tensors on an H100): a few
    // samples of it. Timed on every iteration, it made this benchmark 81 s of the GPU run's 97 s
    // bandwidth check (2026-11-28).
    if (per_tensor.size() >= kPerTensorSamples) continue;
    t0 = Clock::now();
    for (const torch::Tensor& t : list.tensors) {
      benchmark::DoNotOptimize(DigestTensor(t));
      benchmark::DoNotOptimize(TensorL2Norm(t));
    }
    per_tensor.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetLabel(std::to_string(list.tensors.size()) + " " + DtypeName(list.flat.scalar_type()) + " tensors, " +
                 std::to_string(bytes >> 20) + " MiB");
  state.counters["x_copy"] = bench::Median(copied) / bench::Median(capture);
  state.counters["x_per_tensor"] = bench::Median(per_tensor) / bench::Median(capture);
  state.counters["capture_us"] = bench::Median(capture) * 1e6;
}
BENCHMARK(BM_CudaCapture)
    ->ArgName("list")  // 0 small float32, 1 large float32, 2 small bfloat16
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->MinTime(0.3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The norms' kernel alone (SquareSumDeviceChunks of float32 values), against a device-to-device
// copy of the same bytes timed in the same iterations: 50 MiB (a 10M-parameter model's state, 50
// chunks, fewer than the SMs) and 1 GiB; docs/PERFORMANCE.md has the one-warp kernel's figure
// from a profile, to compare.
void BM_CudaSquareSums(benchmark::State& state) {
  if (!ReadyOrSkip(state)) return;
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::string error;
  void* src = DeviceBuffer(bytes, &error);
  void* dst = src ? DeviceBuffer(bytes + 1, &error) : nullptr;  // BM_CudaMemcpyD2D's pair
  if (!dst) return state.SkipWithError(error.c_str());
  int device = 0;
  cudaGetDevice(&device);
  const lockstep::DeviceBuffer buffer{src, bytes, SquaredAs::kFloat32, /*known_device_memory=*/true};
  std::vector<double> sums, copies;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    Result<std::vector<double>> r = SquareSumDeviceChunks(buffer, device, nullptr);
    sums.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    if (!r.ok()) return state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
    state.SetIterationTime(sums.back());

    copies.push_back(TimeDeviceCopy(dst, src, bytes, &error));
    if (copies.back() < 0) return state.SkipWithError(error.c_str());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.counters["squares_us"] = bench::Median(sums) * 1e6;
  state.counters["squares_gbps"] = static_cast<double>(bytes) / bench::Median(sums) / 1e9;
  state.counters["x_copy"] = bench::Median(copies) / bench::Median(sums);
}
BENCHMARK(BM_CudaSquareSums)
    ->ArgName("bytes")
    ->Arg(int64_t{50} << 20)
    ->Arg(int64_t{1} << 30)
    ->MinTime(0.3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lockstep
