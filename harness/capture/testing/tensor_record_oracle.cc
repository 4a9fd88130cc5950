#include "harness/capture/testing/tensor_record_oracle.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "harness/capture/dtype_name.h"
#include "harness/capture/tensor_digest.h"
#include "harness/trace/digest.h"
#include "harness/trace/sum_of_squares.h"

namespace lockstep {
namespace {

// Digest and norm in one pass over memory: each chunk is hashed, then squared and summed while it
// is still in cache (a second pass over a large tensor would read it from DRAM again).
template <typename T>
void FusedDigestAndNorm(const torch::Tensor& t, TensorRecord& r) {
  const T* p = t.data_ptr<T>();
  const size_t n = static_cast<size_t>(t.numel());
  const size_t per_chunk = kDigestChunkBytes / sizeof(T);
  thread_local std::vector<Digest128> chunks;
  thread_local std::string descriptor;
  chunks.clear();
  double sum = 0.0;
  for (size_t i = 0; i < n; i += per_chunk) {
    const size_t len = std::min(per_chunk, n - i);
    chunks.push_back(DigestChunk(p + i, len * sizeof(T)));
    sum += SumOfSquares(p + i, len);
  }
  if (chunks.empty()) chunks.push_back(DigestChunk(nullptr, 0));
  const auto sizes = t.sizes();
  descriptor.clear();
  AppendDigestDescriptor(r.dtype, sizes.data(), sizes.size(), n * sizeof(T), descriptor);
  r.digest = CombineChunkDigests(chunks.data(), chunks.size(), descriptor);
  r.norm = std::sqrt(sum);
}

}  // namespace

Result<TensorRecord> MakeTensorRecord(const std::string& name, TensorKind kind, const torch::Tensor& tensor,
                                      bool replicated, int threads) {
  try {
    TensorRecord r;
    r.name = name;
    r.kind = kind;
    r.numel = tensor.defined() ? tensor.numel() : 0;
    r.dtype = tensor.defined() ? DtypeName(tensor.scalar_type()) : "undefined";
    r.replicated = replicated;
    // The trainer's state (float parameters, gradients, optimizer state): one pass, no LibTorch op.
    const bool fused = threads <= 1 && tensor.defined() && ReadableInPlace(tensor);
    if (fused && tensor.scalar_type() == c10::ScalarType::Float) {
      FusedDigestAndNorm<float>(tensor, r);
    } else if (fused && tensor.scalar_type() == c10::ScalarType::Double) {
      FusedDigestAndNorm<double>(tensor, r);
    } else {
      r.digest = DigestTensor(tensor, threads);
      r.norm = TensorL2Norm(tensor);
    }
    return r;
  } catch (const c10::Error& e) {
    return InternalError("digest of " + name + ": " + e.what_without_backtrace());
  }
}

}  // namespace lockstep
