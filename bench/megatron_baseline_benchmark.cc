// The replica check of Megatron-LM (check_param_hashes_across_dp_replicas): every parameter is
// copied to a float32 host buffer and hashed with SHA-1, "not intended to be called very
// frequently". Timed against lockstep's digest of the same buffer in the same iterations:
//   lockstep-bench --benchmark_filter='Digest|Megatron'
#include <benchmark/benchmark.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bench/median.h"
#include "harness/trace/digest.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

// Each iteration times Megatron's check and lockstep's digest of the same parameter, one after
// the other; x_lockstep is how many times faster the digest is (ratio of the medians).
void BM_MegatronSha1(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<float> param(bytes / sizeof(float));
  for (size_t i = 0; i < param.size(); ++i) param[i] = static_cast<float>(i % 9973) * 0.001f;
  std::vector<float> staging(param.size());
  const std::vector<int64_t> shape = {static_cast<int64_t>(param.size())};
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  std::vector<double> sha1, digest;
  for (auto _ : state) {
    auto t0 = Clock::now();
    // .float() of a bf16 or device parameter is a copy; for float32 on the host NumPy's
    // tobytes() makes one too.
    std::memcpy(staging.data(), param.data(), bytes);
    if (EVP_Digest(staging.data(), bytes, md, &md_len, EVP_sha1(), nullptr) != 1) {
      state.SkipWithError("EVP_Digest(SHA-1) failed");
      break;
    }
    benchmark::DoNotOptimize(md);
    sha1.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    t0 = Clock::now();
    benchmark::DoNotOptimize(DigestBytes(param.data(), bytes, "float32", shape));
    digest.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    state.SetIterationTime(sha1.back());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetLabel("float32 copy + OpenSSL SHA-1");
  state.counters["sha1_GBps"] = static_cast<double>(bytes) / bench::Median(sha1) / 1e9;
  state.counters["digest_GBps"] = static_cast<double>(bytes) / bench::Median(digest) / 1e9;
  state.counters["x_lockstep"] = bench::Median(sha1) / bench::Median(digest);
}
BENCHMARK(BM_MegatronSha1)
    ->ArgName("bytes")
    ->Arg(int64_t{64} << 20)
    ->Arg(int64_t{256} << 20)
    ->MinTime(0.2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lockstep
