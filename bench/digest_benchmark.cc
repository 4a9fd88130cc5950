// Digest throughput against a plain memory read of the same buffer, in the same binary, so the
// ratio (the x_memread counter) is what is compared across machines. Run:
//   <build>/bin/lockstep-bench --benchmark_filter='MemoryRead|Digest'
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "harness/trace/digest.h"

namespace lockstep {
namespace {

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

// Memory-read bandwidth measured by BM_MemoryRead, keyed by (bytes, threads), for the ratio.
std::map<std::pair<int64_t, int64_t>, double>& MemoryReadBandwidth() {
  static std::map<std::pair<int64_t, int64_t>, double> m;
  return m;
}

void BM_MemoryRead(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const std::vector<uint64_t>& buf = Buffer(bytes);
  const size_t words = buf.size();
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (threads == 1) {
      benchmark::DoNotOptimize(SumWords(buf.data(), words));
      continue;
    }
    // Same split as the digest: contiguous parts, one std::thread each but the caller's.
    std::vector<uint64_t> sums(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t a = words * t / threads, b = words * (t + 1) / threads;
        sums[t] = SumWords(buf.data() + a, b - a);
      });
    }
    sums[0] = SumWords(buf.data(), words / threads);
    for (auto& th : pool) th.join();
    benchmark::DoNotOptimize(sums.data());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MemoryReadBandwidth()[{state.range(0), state.range(1)}] = static_cast<double>(state.iterations()) * bytes / seconds;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

void BM_Digest(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const std::vector<uint64_t>& buf = Buffer(bytes);
  const std::vector<int64_t> shape = {static_cast<int64_t>(bytes)};
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    benchmark::DoNotOptimize(DigestBytes(buf.data(), bytes, "uint8", shape, threads));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetLabel(DigestImplementation());
  auto it = MemoryReadBandwidth().find({state.range(0), state.range(1)});
  if (it != MemoryReadBandwidth().end() && seconds > 0) {
    // > 1 is possible for cache-resident buffers, where the read loop is compute bound.
    state.counters["x_memread"] = static_cast<double>(state.iterations()) * bytes / seconds / it->second;
  }
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t mib : {1, 64, 256}) {
    for (int64_t threads : {1, 2}) b->Args({mib << 20, threads});
  }
  b->ArgNames({"bytes", "threads"})->MinTime(kMinTime)->UseRealTime()->Unit(benchmark::kMillisecond);
}

// Registration order is run order: each memory read runs before the digest it is compared with.
BENCHMARK(BM_MemoryRead)->Apply(Sizes);
BENCHMARK(BM_Digest)->Apply(Sizes);

}  // namespace
}  // namespace lockstep
