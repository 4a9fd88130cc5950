#include "harness/capture/tensor_digest.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "harness/trace/digest.h"
#include "harness/trace/sum_of_squares.h"
#if LOCKSTEP_HAVE_CUDA_DIGEST
#include "harness/capture/cuda/cuda_digest.h"
#endif

namespace lockstep {
namespace {

Digest128 DigestInPlace(const torch::Tensor& t, int threads) {
  const auto sizes = t.sizes();
  const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  return DigestBytes(t.data_ptr(), nbytes, DtypeName(t.scalar_type()), sizes.data(), sizes.size(), threads);
}

// Sum of squares chunk by chunk (the digest's 1 MiB chunks): the order MultiTensorDigest adds in
// (and the test oracle's fused pass, testing/tensor_record_oracle.cc), so the bits are the same.
double ChunkedSumOfSquares(SquaredAs as, const unsigned char* p, size_t nbytes) {
  double total = 0.0;
  for (size_t at = 0; at < nbytes; at += kDigestChunkBytes) {
    total += SumOfSquaresOfBytes(as, p + at, std::min(kDigestChunkBytes, nbytes - at));
  }
  return total;
}

}  // namespace

SquaredAs SquaredAsOf(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return SquaredAs::kFloat32;
    case c10::ScalarType::Double: return SquaredAs::kFloat64;
    case c10::ScalarType::Half: return SquaredAs::kFloat16;
    case c10::ScalarType::BFloat16: return SquaredAs::kBFloat16;
    case c10::ScalarType::Long: return SquaredAs::kInt64;
    case c10::ScalarType::Int: return SquaredAs::kInt32;
    case c10::ScalarType::Short: return SquaredAs::kInt16;
    case c10::ScalarType::Char: return SquaredAs::kInt8;
    case c10::ScalarType::Byte: return SquaredAs::kUInt8;
    case c10::ScalarType::Bool: return SquaredAs::kBool;
    default: return SquaredAs::kNone;
  }
}

bool ValuesInPlace(const torch::Tensor& t) {
  return t.layout() == torch::kStrided && t.is_contiguous() && !t.is_conj() && !t.is_neg();
}

bool ReadableInPlace(const torch::Tensor& t) { return t.device().is_cpu() && ValuesInPlace(t); }

Digest128 DigestTensor(const torch::Tensor& tensor, int threads) {
  if (!tensor.defined()) return DigestBytes(nullptr, 0, "undefined", nullptr, 0, threads);
  if (ReadableInPlace(tensor)) return DigestInPlace(tensor, threads);
#if LOCKSTEP_HAVE_CUDA_DIGEST
  if (tensor.is_cuda()) {
    // Hashed where it lives (harness/capture/cuda): only 16 bytes per MiB come back to the host.
    // LibTorch's default CUDA stream is the legacy default stream, so the kernel runs after what
    // the trainer queued there (work on a non-blocking side stream must be synced by its owner).
    // A view is made contiguous on the device first, as below on the host.
    // On the tensor's own device, whichever is current.
    torch::Tensor t = tensor.detach().resolve_conj().resolve_neg().contiguous();
    const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
    Result<std::vector<Digest128>> chunks = DigestDeviceChunks(
        {DeviceBuffer{t.const_data_ptr(), nbytes, SquaredAs::kNone, /*known_device_memory=*/true}},
        t.get_device(), /*stream=*/nullptr);
    TORCH_CHECK(chunks.ok(), chunks.status().ToString());
    const auto sizes = t.sizes();
    return CombineChunkDigests(chunks.value(), DigestDescriptor(DtypeName(t.scalar_type()), sizes.data(), sizes.size(), nbytes));
  }
#endif
  // Lazy conjugate/negative views are materialized so the digest is of the values they show.
  torch::Tensor t = tensor.detach().resolve_conj().resolve_neg();
  if (!t.device().is_cpu()) t = t.to(torch::kCPU);
  t = t.contiguous();
  const auto sizes = t.sizes();
  const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  return DigestBytes(t.data_ptr(), nbytes, DtypeName(t.scalar_type()), sizes.data(), sizes.size(), threads);
}

double TensorL2Norm(const torch::Tensor& tensor) {
  if (!tensor.defined() || tensor.numel() == 0) return 0.0;
  const SquaredAs as = SquaredAsOf(tensor.scalar_type());
  if (as != SquaredAs::kNone && ReadableInPlace(tensor)) {
    const size_t nbytes = static_cast<size_t>(tensor.numel()) * tensor.element_size();
    return std::sqrt(ChunkedSumOfSquares(as, static_cast<const unsigned char*>(tensor.const_data_ptr()), nbytes));
  }
#if LOCKSTEP_HAVE_CUDA_DIGEST
  if (tensor.is_cuda() && as != SquaredAs::kNone) {
    // Summed on the device in the order above (harness/capture/cuda/chunk_squares.cuh): the same bits
    // as the CPU copy's norm, and as MultiTensorDigest's batch.
    torch::Tensor t = tensor.detach().resolve_neg().contiguous();
    const DeviceBuffer buffer{t.const_data_ptr(), static_cast<size_t>(t.numel()) * t.element_size(), as,
                              /*known_device_memory=*/true};
    Result<std::vector<double>> sums = SquareSumDeviceChunks(buffer, t.get_device(), /*stream=*/nullptr);
    TORCH_CHECK(sums.ok(), sums.status().ToString());
    double total = 0.0;
    for (const double s : *sums) total += s;
    return std::sqrt(total);
  }
#endif
  return L2NormTensor(tensor).item<double>();
}

torch::Tensor L2NormTensor(const torch::Tensor& tensor) {
  torch::Tensor t = tensor.detach();
  // linalg_vector_norm rejects integer and bool inputs; their norm is still well defined.
  if (!t.is_floating_point() && !t.is_complex()) t = t.to(torch::kDouble);
  return torch::linalg_vector_norm(t, 2, c10::nullopt, false,
                                   t.is_complex() ? c10::optional<c10::ScalarType>() : c10::ScalarType::Double);
}

}  // namespace lockstep
