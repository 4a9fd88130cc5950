// The replica check of Megatron-LM (check_param_hashes_across_dp_replicas): every parameter is
// copied to a float32 host buffer and hashed with SHA-1, "not intended to be called very
// frequently". Measured on the same buffers as BM_Digest, so the table in ci/bench.sh can put
// lockstep's digest next to it (digest/sha1 ratio):
//   lockstep-bench --benchmark_filter='Digest|Megatron'
#include <benchmark/benchmark.h>
#include <openssl/evp.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace lockstep {
namespace {

void BM_MegatronSha1(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<float> param(bytes / sizeof(float));
  for (size_t i = 0; i < param.size(); ++i) param[i] = static_cast<float>(i % 9973) * 0.001f;
  std::vector<float> staging(param.size());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  for (auto _ : state) {
    // .float() of a bf16 or device parameter is a copy; for float32 on the host NumPy's
    // tobytes() makes one too.
    std::memcpy(staging.data(), param.data(), bytes);
    if (EVP_Digest(staging.data(), bytes, md, &md_len, EVP_sha1(), nullptr) != 1) {
      state.SkipWithError("EVP_Digest(SHA-1) failed");
      break;
    }
    benchmark::DoNotOptimize(md);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetLabel("float32 copy + OpenSSL SHA-1");
}
BENCHMARK(BM_MegatronSha1)
    ->ArgName("bytes")
    ->Arg(int64_t{64} << 20)
    ->Arg(int64_t{256} << 20)
    ->MinTime(0.2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lockstep
