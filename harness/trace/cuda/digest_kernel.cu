// The CUDA digest: a kernel for level 1 (one thread block per 1 MiB chunk; the split is described
// in digest_kernel.cuh) and the host API of cuda_digest.h around it.
#include "harness/trace/cuda/cuda_digest.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "harness/trace/cuda/digest_kernel.cuh"
#include "harness/trace/digest.h"

namespace lockstep {
namespace cuda_digest {
namespace {

static_assert(kChunkBytes == kDigestChunkBytes, "the kernel's chunk size is the digest's");

// 16-byte loads through the read-only path: a block's 16 loads per thread are independent, so
// they are all in flight at once. Needs a 16-byte aligned chunk start.
struct VectorLoad {
  const uint8_t* block;
  __device__ xxh3::LanePair operator()(size_t offset) const {
    const ulonglong2 v = __ldg(reinterpret_cast<const ulonglong2*>(block + offset));
    return xxh3::LanePair{v.x, v.y};
  }
};

// Any alignment (a view into a buffer): bytewise, correct and slower.
struct ByteLoad {
  const uint8_t* block;
  __device__ xxh3::LanePair operator()(size_t offset) const {
    return xxh3::LanePair{xxh3::ReadLE64(block + offset), xxh3::ReadLE64(block + offset + 8)};
  }
};

// out[2*c] = low, out[2*c+1] = high 64 bits of chunk c's XXH3-128.
template <bool kAligned>
__global__ void __launch_bounds__(kThreadsPerChunk) ChunkDigestKernel(const uint8_t* data, size_t nbytes,
                                                                      uint64_t* out) {
  __shared__ uint64_t key_words[xxh3::kBlockKeyWords];
  __shared__ uint64_t sums[2][kBlocksPerRound][8];
  __shared__ uint64_t lanes[8];

  const size_t chunk_index = blockIdx.x;
  const uint8_t* chunk = data + chunk_index * kChunkBytes;
  const size_t len = ChunkLength(nbytes, chunk_index);
  const int t = static_cast<int>(threadIdx.x);

  if (len <= xxh3::kMidSizeMax) {
    if (t == 0) {
      const xxh3::Hash128 h = xxh3::HashShort128(chunk, len, 0);
      out[2 * chunk_index] = h.low;
      out[2 * chunk_index + 1] = h.high;
    }
    return;
  }

  if (t < static_cast<int>(xxh3::kBlockKeyWords)) key_words[t] = xxh3::ReadLE64(xxh3::DefaultSecret() + 8 * t);
  uint64_t acc = 0;
  uint64_t scramble_key = 0;
  if (t < 8) {
    acc = InitialLane(t);
    scramble_key = ScrambleKey(t);
  }
  __syncthreads();

  const size_t full_blocks = xxh3::FullBlocks(len);
  const size_t rounds = RoundCount(full_blocks);
  auto make_load = [](const uint8_t* block) {
    if constexpr (kAligned) {
      return VectorLoad{block};
    } else {
      return ByteLoad{block};
    }
  };
  for (size_t r = 0; r < rounds; ++r) {
    // Two buffers: round r+1's sums are written while lanes 0..7 may still read round r's; the
    // barrier of round r+1 orders round r+2's writes after that scan.
    uint64_t(*round_sums)[8] = sums[r & 1];
    RoundThreadWork(chunk, full_blocks, r, t, key_words, round_sums, make_load);
    __syncthreads();
    if (t < 8) acc = RoundScan(acc, full_blocks, r, round_sums, t, scramble_key);
  }
  if (t < 8) lanes[t] = acc;
  __syncthreads();
  if (t == 0) {
    uint64_t a[8];
    for (int i = 0; i < 8; ++i) a[i] = lanes[i];
    const xxh3::Hash128 h = xxh3::LongTail(a, chunk, len, xxh3::DefaultSecret(), xxh3::kSecretSize);
    out[2 * chunk_index] = h.low;
    out[2 * chunk_index + 1] = h.high;
  }
}

Status CudaStatus(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return Status::Ok();
  return InternalError(std::string("CUDA digest: ") + call + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

}  // namespace
}  // namespace cuda_digest

bool CudaDeviceAvailable(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clears it, so that the next CUDA call does not report it again
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device in this machine";
    return false;
  }
  return true;
}

Result<Digest128> DigestDeviceBuffer(const void* device_ptr, size_t nbytes, std::string_view dtype,
                                     const std::vector<int64_t>& shape, cudaStream_t stream) {
  using cuda_digest::CudaStatus;
  const auto* data = static_cast<const uint8_t*>(device_ptr);
  if (nbytes > 0) {
    if (data == nullptr) return InvalidArgumentError("CUDA digest: null pointer for " + std::to_string(nbytes) + " bytes");
    cudaPointerAttributes attributes{};
    LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaPointerGetAttributes(&attributes, data), "cudaPointerGetAttributes"));
    if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
      return InvalidArgumentError("CUDA digest: the pointer is not device memory");
    }
  }
  const size_t chunks = cuda_digest::ChunkCount(nbytes);
  if (chunks > 0x7fffffffULL) return InvalidArgumentError("CUDA digest: buffer too large for one grid");

  // Stream-ordered allocation: no device-wide synchronization, unlike cudaMalloc/cudaFree (the
  // fallback where memory pools are not supported).
  struct Scratch {
    ~Scratch() {
      if (ptr == nullptr) return;
      if (pooled) {
        cudaFreeAsync(ptr, stream);
      } else {
        cudaFree(ptr);
      }
    }
    uint64_t* ptr = nullptr;
    bool pooled = true;
    cudaStream_t stream;
  } scratch;
  scratch.stream = stream;
  const size_t out_bytes = chunks * 2 * sizeof(uint64_t);
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&scratch.ptr), out_bytes, stream);
  if (e == cudaErrorNotSupported) {
    cudaGetLastError();
    scratch.pooled = false;
    e = cudaMalloc(reinterpret_cast<void**>(&scratch.ptr), out_bytes);
  }
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(e, scratch.pooled ? "cudaMallocAsync" : "cudaMalloc"));

  const dim3 grid(static_cast<unsigned>(chunks));
  if (reinterpret_cast<uintptr_t>(data) % 16 == 0) {
    cuda_digest::ChunkDigestKernel<true><<<grid, cuda_digest::kThreadsPerChunk, 0, stream>>>(data, nbytes, scratch.ptr);
  } else {
    cuda_digest::ChunkDigestKernel<false><<<grid, cuda_digest::kThreadsPerChunk, 0, stream>>>(data, nbytes, scratch.ptr);
  }
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "ChunkDigestKernel launch"));
  std::vector<uint64_t> host(chunks * 2);
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(host.data(), scratch.ptr, out_bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync"));
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));

  std::vector<Digest128> digests(chunks);
  for (size_t c = 0; c < chunks; ++c) digests[c] = Digest128{host[2 * c + 1], host[2 * c]};
  return CombineChunkDigests(digests, DigestDescriptor(dtype, shape.data(), shape.size(), nbytes));
}

}  // namespace lockstep
