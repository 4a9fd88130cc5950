// Digest throughput against a plain memory read of the same buffer, in the same binary, so the
// ratio (the x_memread counter) is what is compared across machines. BM_Digest times a memory
// read and a digest alternately in every iteration and takes the ratio of the medians, so load
// from other processes hits both alike; with threads > 1 it also times a 1-thread digest and read
// (x_1thread, memread_x_1thread: how each scales). BM_MemoryRead is the read loop alone.
// BM_SumOfSquares is the norm's loop (sum_of_squares.h) against the same read, the same way, on
// float32 and on 16-bit values. Run:
//   <build>/bin/lockstep-bench --benchmark_filter='MemoryRead|Digest|SumOfSquares'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "bench/median.h"
#include "harness/trace/digest.h"
#include "harness/trace/sum_of_squares.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kMinTime = 0.2;  // seconds per benchmark: the whole topic stays under a minute

// One buffer per size, filled once with non-trivial bytes (every page touched) and kept.
const std::vector<uint64_t>& Buffer(size_t bytes) {
  static std::map<size_t, std::unique_ptr<std::vector<uint64_t>>> buffers;
  auto& b = buffers[bytes];
  if (!b) {
    b = std::make_unique<std::vector<uint64_t>>(bytes / sizeof(uint64_t));
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (uint64_t& w : *b) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      w = x;
    }
  }
  return *b;
}

uint64_t SumWords(const uint64_t* p, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += p[i];
  return sum;
}

// The read loop split the way DigestBytes splits its work: contiguous ranges of 1 MiB chunks, at
// most one thread per chunk, the caller's thread taking the first range.
uint64_t ReadAll(const std::vector<uint64_t>& buf, int threads) {
  const size_t bytes = buf.size() * sizeof(uint64_t);
  const size_t chunks = std::max<size_t>(1, (bytes + kDigestChunkBytes - 1) / kDigestChunkBytes);
  const size_t workers = std::min<size_t>(chunks, static_cast<size_t>(std::max(threads, 1)));
  if (workers <= 1) return SumWords(buf.data(), buf.size());
  const size_t words_per_chunk = kDigestChunkBytes / sizeof(uint64_t);
  auto word = [&](size_t w) { return std::min(buf.size(), chunks * w / workers * words_per_chunk); };
  std::vector<uint64_t> sums(workers);
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) {
    pool.emplace_back([&, w] { sums[w] = SumWords(buf.data() + word(w), word(w + 1) - word(w)); });
  }
  sums[0] = SumWords(buf.data(), word(1));
  for (auto& t : pool) t.join();
  uint64_t total = 0;
  for (uint64_t s : sums) total += s;
  return total;
}

template <typename Fn>
double Seconds(Fn&& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void BM_MemoryRead(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const std::vector<uint64_t>& buf = Buffer(bytes);
  for (auto _ : state) benchmark::DoNotOptimize(ReadAll(buf, threads));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

void BM_Digest(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const std::vector<uint64_t>& buf = Buffer(bytes);
  const std::vector<int64_t> shape = {static_cast<int64_t>(bytes)};
  std::vector<double> digest, read, single, single_read;
  for (auto _ : state) {
    read.push_back(Seconds([&] { benchmark::DoNotOptimize(ReadAll(buf, threads)); }));
    digest.push_back(Seconds([&] { benchmark::DoNotOptimize(DigestBytes(buf.data(), bytes, "uint8", shape, threads)); }));
    if (threads > 1) {
      single.push_back(Seconds([&] { benchmark::DoNotOptimize(DigestBytes(buf.data(), bytes, "uint8", shape, 1)); }));
      single_read.push_back(Seconds([&] { benchmark::DoNotOptimize(ReadAll(buf, 1)); }));
    }
    state.SetIterationTime(digest.back());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetLabel(DigestImplementation());
  const double d = bench::Median(digest);
  // > 1 is possible for cache-resident buffers, where the read loop is compute bound.
  state.counters["x_memread"] = bench::Median(read) / d;
  state.counters["memread_GBps"] = static_cast<double>(bytes) / bench::Median(read) / 1e9;
  state.counters["digest_GBps"] = static_cast<double>(bytes) / d / 1e9;
  if (threads > 1) {
    // Scaling of the digest, and of the read loop for comparison: where one core already
    // saturates memory bandwidth neither can scale.
    state.counters["x_1thread"] = bench::Median(single) / d;
    state.counters["memread_x_1thread"] = bench::Median(single_read) / bench::Median(read);
  }
}

// float32 values in [-1, 1) (no subnormals, which some CPUs convert slowly), every page touched.
const std::vector<float>& FloatBuffer(size_t bytes) {
  static std::map<size_t, std::unique_ptr<std::vector<float>>> buffers;
  auto& b = buffers[bytes];
  if (!b) {
    b = std::make_unique<std::vector<float>>(bytes / sizeof(float));
    uint32_t x = 0x9e3779b9u;
    for (float& f : *b) {
      x = x * 1664525u + 1013904223u;
      f = static_cast<float>(static_cast<int32_t>(x >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
    }
  }
  return *b;
}

// dtype 0: float32 values; 1, 2: the same buffer's bytes read as bfloat16 and as float16 values
// (each 16 bits of a float32 in [-1, 1): every kind of value, subnormals among the float16 ones).
void BM_SumOfSquares(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const std::vector<float>& buf = FloatBuffer(bytes);
  const SquaredAs as = state.range(1) == 0 ? SquaredAs::kFloat32 : state.range(1) == 1 ? SquaredAs::kBFloat16
                                                                                       : SquaredAs::kFloat16;
  const auto* words = reinterpret_cast<const uint64_t*>(buf.data());
  std::vector<double> sum, read;
  for (auto _ : state) {
    read.push_back(Seconds([&] { benchmark::DoNotOptimize(SumWords(words, bytes / sizeof(uint64_t))); }));
    sum.push_back(Seconds([&] { benchmark::DoNotOptimize(SumOfSquaresOfBytes(as, buf.data(), bytes)); }));
    state.SetIterationTime(sum.back());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.counters["x_memread"] = bench::Median(read) / bench::Median(sum);
  state.counters["lanes"] = static_cast<double>(kSumOfSquaresLanes);
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t mib : {1, 64, 256}) {
    for (int64_t threads : {1, 2}) b->Args({mib << 20, threads});
  }
  b->ArgNames({"bytes", "threads"})->MinTime(kMinTime)->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_MemoryRead)->Apply(Sizes)->UseRealTime();
BENCHMARK(BM_Digest)->Apply(Sizes)->UseManualTime();
BENCHMARK(BM_SumOfSquares)
    ->ArgNames({"bytes", "dtype"})  // dtype 0 float32, 1 bfloat16, 2 float16
    ->Args({1 << 20, 0})
    ->Args({64 << 20, 0})
    ->Args({1 << 20, 1})
    ->Args({1 << 20, 2})
    ->MinTime(kMinTime)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

}  // namespace
}  // namespace lockstep
