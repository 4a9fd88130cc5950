// The CUDA digest: a kernel for level 1 (one thread block per 1 MiB chunk; the split is described
// in digest_kernel.cuh) and the host API of cuda_digest.h around it.
#include "harness/trace/cuda/cuda_digest.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

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

// The block's shared memory, declared once in each kernel and passed to ChunkInBlock.
struct BlockShared {
  uint64_t key_words[xxh3::kBlockKeyWords];
  uint64_t sums[2][kBlocksPerRound][8];
  uint64_t lanes[8];
};

// XXH3-128 of one chunk (`len` <= kChunkBytes bytes at `chunk`) by the whole thread block; thread 0
// writes the low 64 bits to out[0] and the high ones to out[1]. Every thread of the block must call
// it (it has barriers).
template <bool kAligned>
__device__ void ChunkInBlock(const uint8_t* chunk, size_t len, BlockShared& sh, uint64_t* out) {
  const int t = static_cast<int>(threadIdx.x);

  if (len <= xxh3::kMidSizeMax) {
    if (t == 0) {
      const xxh3::Hash128 h = xxh3::HashShort128(chunk, len, 0);
      out[0] = h.low;
      out[1] = h.high;
    }
    return;
  }

  if (t < static_cast<int>(xxh3::kBlockKeyWords)) sh.key_words[t] = xxh3::ReadLE64(xxh3::DefaultSecret() + 8 * t);
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
    uint64_t(*round_sums)[8] = sh.sums[r & 1];
    RoundThreadWork(chunk, full_blocks, r, t, sh.key_words, round_sums, make_load);
    __syncthreads();
    if (t < 8) acc = RoundScan(acc, full_blocks, r, round_sums, t, scramble_key);
  }
  if (t < 8) sh.lanes[t] = acc;
  __syncthreads();
  if (t == 0) {
    uint64_t a[8];
    for (int i = 0; i < 8; ++i) a[i] = sh.lanes[i];
    const xxh3::Hash128 h = xxh3::LongTail(a, chunk, len, xxh3::DefaultSecret(), xxh3::kSecretSize);
    out[0] = h.low;
    out[1] = h.high;
  }
}

// One buffer: out[2*c] = low, out[2*c+1] = high 64 bits of chunk c's XXH3-128.
template <bool kAligned>
__global__ void __launch_bounds__(kThreadsPerChunk) ChunkDigestKernel(const uint8_t* data, size_t nbytes,
                                                                      uint64_t* out) {
  __shared__ BlockShared sh;
  const size_t c = blockIdx.x;
  ChunkInBlock<kAligned>(data + c * kChunkBytes, ChunkLength(nbytes, c), sh, out + 2 * c);
}

// Many buffers in one launch: block b digests tasks[b] into out[2*b], out[2*b+1]. A task's start
// decides the loads (the branch is the same for every thread of the block).
__global__ void __launch_bounds__(kThreadsPerChunk) ChunkTableKernel(const ChunkTask* tasks, uint64_t* out) {
  __shared__ BlockShared sh;
  const size_t b = blockIdx.x;
  const ChunkTask task = tasks[b];
  if (reinterpret_cast<uintptr_t>(task.data) % 16 == 0) {
    ChunkInBlock<true>(task.data, task.len, sh, out + 2 * b);
  } else {
    ChunkInBlock<false>(task.data, task.len, sh, out + 2 * b);
  }
}

Status CudaStatus(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return Status::Ok();
  return InternalError(std::string("CUDA digest: ") + call + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// Device scratch memory for one call, stream-ordered where the device supports memory pools (no
// device-wide synchronization, unlike cudaMalloc/cudaFree, the fallback).
class Scratch {
 public:
  explicit Scratch(cudaStream_t stream) : stream_(stream) {}
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (ptr_ == nullptr) return;
    if (pooled_) {
      cudaFreeAsync(ptr_, stream_);
    } else {
      cudaFree(ptr_);
    }
  }
  Status Allocate(size_t bytes) {
    cudaError_t e = cudaMallocAsync(&ptr_, bytes, stream_);
    if (e == cudaErrorNotSupported) {
      cudaGetLastError();
      pooled_ = false;
      e = cudaMalloc(&ptr_, bytes);
    }
    return CudaStatus(e, pooled_ ? "cudaMallocAsync" : "cudaMalloc");
  }
  uint8_t* get() const { return static_cast<uint8_t*>(ptr_); }

 private:
  cudaStream_t stream_;
  void* ptr_ = nullptr;
  bool pooled_ = true;
};

Status CheckDevicePointer(const void* data, size_t nbytes) {
  if (nbytes == 0) return Status::Ok();
  if (data == nullptr) return InvalidArgumentError("CUDA digest: null pointer for " + std::to_string(nbytes) + " bytes");
  cudaPointerAttributes attributes{};
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaPointerGetAttributes(&attributes, data), "cudaPointerGetAttributes"));
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
    return InvalidArgumentError("CUDA digest: the pointer is not device memory");
  }
  return Status::Ok();
}

// out (2 words per chunk, low first) as Digest128s.
std::vector<Digest128> ChunkDigests(const std::vector<uint64_t>& words) {
  std::vector<Digest128> digests(words.size() / 2);
  for (size_t c = 0; c < digests.size(); ++c) digests[c] = Digest128{words[2 * c + 1], words[2 * c]};
  return digests;
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
  LOCKSTEP_RETURN_IF_ERROR(cuda_digest::CheckDevicePointer(data, nbytes));
  const size_t chunks = cuda_digest::ChunkCount(nbytes);
  if (chunks > 0x7fffffffULL) return InvalidArgumentError("CUDA digest: buffer too large for one grid");

  cuda_digest::Scratch scratch(stream);
  const size_t out_bytes = chunks * 2 * sizeof(uint64_t);
  LOCKSTEP_RETURN_IF_ERROR(scratch.Allocate(out_bytes));
  auto* out = reinterpret_cast<uint64_t*>(scratch.get());

  const dim3 grid(static_cast<unsigned>(chunks));
  if (reinterpret_cast<uintptr_t>(data) % 16 == 0) {
    cuda_digest::ChunkDigestKernel<true><<<grid, cuda_digest::kThreadsPerChunk, 0, stream>>>(data, nbytes, out);
  } else {
    cuda_digest::ChunkDigestKernel<false><<<grid, cuda_digest::kThreadsPerChunk, 0, stream>>>(data, nbytes, out);
  }
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "ChunkDigestKernel launch"));
  std::vector<uint64_t> host(chunks * 2);
  LOCKSTEP_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(host.data(), out, out_bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync"));
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  const std::vector<Digest128> digests = cuda_digest::ChunkDigests(host);
  return CombineChunkDigests(digests, DigestDescriptor(dtype, shape.data(), shape.size(), nbytes));
}

Result<std::vector<Digest128>> DigestDeviceChunks(const std::vector<DeviceBuffer>& buffers, int device,
                                                  cudaStream_t stream) {
  using cuda_digest::CudaStatus;
  // On the buffers' device: a kernel on another one could not read them (without peer access).
  int previous = 0;
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&previous), "cudaGetDevice"));
  if (previous != device) LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
  struct Restore {
    ~Restore() {
      if (from != to) cudaSetDevice(to);
    }
    int from, to;
  } restore{device, previous};
  std::vector<cuda_digest::ChunkTask> tasks;
  for (const DeviceBuffer& b : buffers) {
    LOCKSTEP_RETURN_IF_ERROR(cuda_digest::CheckDevicePointer(b.data, b.nbytes));
    cuda_digest::AppendChunkTasks(static_cast<const uint8_t*>(b.data), b.nbytes, tasks);
  }
  if (tasks.empty()) return std::vector<Digest128>{};
  if (tasks.size() > 0x7fffffffULL) return InvalidArgumentError("CUDA digest: too many chunks for one grid");

  // One allocation: the task table, then the output (both 8-byte aligned: a task is 16 bytes).
  const size_t table_bytes = tasks.size() * sizeof(cuda_digest::ChunkTask);
  const size_t out_bytes = tasks.size() * 2 * sizeof(uint64_t);
  cuda_digest::Scratch scratch(stream);
  LOCKSTEP_RETURN_IF_ERROR(scratch.Allocate(table_bytes + out_bytes));
  auto* table = reinterpret_cast<cuda_digest::ChunkTask*>(scratch.get());
  auto* out = reinterpret_cast<uint64_t*>(scratch.get() + table_bytes);
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(table, tasks.data(), table_bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (table)"));
  cuda_digest::ChunkTableKernel<<<dim3(static_cast<unsigned>(tasks.size())), cuda_digest::kThreadsPerChunk, 0, stream>>>(
      table, out);
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "ChunkTableKernel launch"));
  std::vector<uint64_t> host(tasks.size() * 2);
  LOCKSTEP_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(host.data(), out, out_bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync"));
  // The table must outlive the copy of it, which is queued: the synchronization covers both.
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  return cuda_digest::ChunkDigests(host);
}

}  // namespace lockstep
