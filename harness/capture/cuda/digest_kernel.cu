// The CUDA digest: a kernel for level 1 (one thread block per 1 MiB chunk; the split is described
// in digest_kernel.cuh), one for the norms' sums of squares (one warp per chunk, chunk_squares.cuh),
// and the host API of cuda_digest.h around them.
#include "harness/capture/cuda/cuda_digest.h"
#include "harness/capture/cuda/on_device.h"
#include "harness/capture/cuda/queued_chunk_kernels.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "harness/capture/cuda/chunk_squares.cuh"
#include "harness/capture/cuda/digest_kernel.cuh"
#include "harness/trace/digest.h"

namespace lockstep {
namespace cuda_digest {
namespace {


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
  ChunkInBlock<kAligned>(data + c * kChunkBytes, DigestChunkLength(nbytes, c), sh, out + 2 * c);
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

// One warp per task: the chunk's sum of squares in the norm's order (chunk_squares.cuh), lane L
// being partial sum L; lane 0 combines the 32 as the CPU's Total does.
__global__ void __launch_bounds__(kSquareLanes) ChunkSquaresKernel(const SquareTask* tasks, double* out) {
  __shared__ double lanes[kSquareLanes];
  const SquareTask task = tasks[blockIdx.x];
  const int lane = static_cast<int>(threadIdx.x);
  double sum = 0.0;
  switch (task.as) {
    case SquaredAs::kFloat64: sum = LaneSquareSum(reinterpret_cast<const double*>(task.data), task.count, lane); break;
    case SquaredAs::kFloat32: sum = LaneSquareSum(reinterpret_cast<const float*>(task.data), task.count, lane); break;
    case SquaredAs::kFloat16:
      sum = LaneSquareSum(reinterpret_cast<const Float16Bits*>(task.data), task.count, lane);
      break;
    case SquaredAs::kBFloat16:
      sum = LaneSquareSum(reinterpret_cast<const BFloat16Bits*>(task.data), task.count, lane);
      break;
    case SquaredAs::kInt64: sum = LaneSquareSum(reinterpret_cast<const int64_t*>(task.data), task.count, lane); break;
    case SquaredAs::kInt32: sum = LaneSquareSum(reinterpret_cast<const int32_t*>(task.data), task.count, lane); break;
    case SquaredAs::kInt16: sum = LaneSquareSum(reinterpret_cast<const int16_t*>(task.data), task.count, lane); break;
    case SquaredAs::kInt8: sum = LaneSquareSum(reinterpret_cast<const int8_t*>(task.data), task.count, lane); break;
    case SquaredAs::kUInt8: sum = LaneSquareSum(reinterpret_cast<const uint8_t*>(task.data), task.count, lane); break;
    case SquaredAs::kBool: sum = LaneSquareSum(reinterpret_cast<const BoolByte*>(task.data), task.count, lane); break;
    case SquaredAs::kNone: break;  // no task is made for it (AppendSquareTasks)
  }
  lanes[lane] = sum;
  __syncthreads();
  if (lane == 0) out[blockIdx.x] = PairwiseTotal(lanes);
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
  const size_t chunks = DigestChunkCount(nbytes);
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

namespace cuda_digest {
namespace {


Status CheckSquaredBuffer(const DeviceBuffer& b) {
  if (b.squares == SquaredAs::kNone || b.nbytes == 0) return Status::Ok();
  const size_t size = SquaredValueBytes(b.squares);
  if (reinterpret_cast<uintptr_t>(b.data) % size != 0 || b.nbytes % size != 0) {
    return InvalidArgumentError("CUDA digest: a buffer of " + std::to_string(size) + "-byte values at " +
                                std::to_string(reinterpret_cast<uintptr_t>(b.data)) + " with " +
                                std::to_string(b.nbytes) + " bytes is not aligned to its values");
  }
  return Status::Ok();
}

// Both kernels over `buffers`: the chunk digests when `digests` is given, the chunk square sums of
// the buffers marked `squares` when `square_sums` is given (one entry per chunk of every buffer when
// digested too, else one per chunk of the marked buffers). One allocation, the tables copied in,
// the results copied back with one copy, one synchronization.
Status RunChunkKernels(const std::vector<DeviceBuffer>& buffers, int device, cudaStream_t stream,
                       std::vector<Digest128>* digests, std::vector<double>* square_sums) {
  OnDevice on;
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(on.Enter(device), "cudaSetDevice"));
  std::vector<ChunkTask> tasks;
  std::vector<SquareTask> square_tasks;
  std::vector<size_t> square_at;  // square task k's position in *square_sums
  for (const DeviceBuffer& b : buffers) {
    if (!b.known_device_memory) LOCKSTEP_RETURN_IF_ERROR(CheckDevicePointer(b.data, b.nbytes));
    const auto* data = static_cast<const uint8_t*>(b.data);
    const size_t first_chunk = digests ? tasks.size() : square_tasks.size();
    if (digests) AppendChunkTasks(data, b.nbytes, tasks);
    if (square_sums) {
      LOCKSTEP_RETURN_IF_ERROR(CheckSquaredBuffer(b));
      const size_t before = square_tasks.size();
      AppendSquareTasks(data, b.nbytes, b.squares, square_tasks);
      for (size_t k = before; k < square_tasks.size(); ++k) square_at.push_back(first_chunk + (k - before));
    }
  }
  if (digests) digests->clear();
  if (square_sums) square_sums->assign(digests ? tasks.size() : square_tasks.size(), 0.0);
  if (tasks.empty() && square_tasks.empty()) return Status::Ok();
  if (tasks.size() > 0x7fffffffULL || square_tasks.size() > 0x7fffffffULL) {
    return InvalidArgumentError("CUDA digest: too many chunks for one grid");
  }

  // One allocation: the two tables, then the two outputs (all 8-byte aligned: a task is 16 bytes),
  // the outputs next to each other so that one copy brings both back.
  const size_t table_bytes = tasks.size() * sizeof(ChunkTask);
  const size_t square_table_bytes = square_tasks.size() * sizeof(SquareTask);
  const size_t out_bytes = tasks.size() * 2 * sizeof(uint64_t);
  const size_t square_out_bytes = square_tasks.size() * sizeof(double);
  Scratch scratch(stream);
  LOCKSTEP_RETURN_IF_ERROR(scratch.Allocate(table_bytes + square_table_bytes + out_bytes + square_out_bytes));
  auto* table = reinterpret_cast<ChunkTask*>(scratch.get());
  auto* square_table = reinterpret_cast<SquareTask*>(scratch.get() + table_bytes);
  uint8_t* results = scratch.get() + table_bytes + square_table_bytes;
  auto* out = reinterpret_cast<uint64_t*>(results);
  auto* square_out = reinterpret_cast<double*>(results + out_bytes);
  if (!tasks.empty()) {
    LOCKSTEP_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(table, tasks.data(), table_bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (table)"));
    ChunkTableKernel<<<dim3(static_cast<unsigned>(tasks.size())), kThreadsPerChunk, 0, stream>>>(table, out);
    LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "ChunkTableKernel launch"));
  }
  if (!square_tasks.empty()) {
    LOCKSTEP_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(square_table, square_tasks.data(), square_table_bytes, cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync (square table)"));
    ChunkSquaresKernel<<<dim3(static_cast<unsigned>(square_tasks.size())), kSquareLanes, 0, stream>>>(square_table,
                                                                                                      square_out);
    LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "ChunkSquaresKernel launch"));
  }
  std::vector<uint8_t> host(out_bytes + square_out_bytes);
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(host.data(), results, host.size(), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync"));
  // The tables must outlive the copies of them, which are queued: the synchronization covers all.
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  if (digests) {
    std::vector<uint64_t> words(tasks.size() * 2);
    std::memcpy(words.data(), host.data(), out_bytes);
    *digests = ChunkDigests(words);
  }
  for (size_t k = 0; k < square_tasks.size(); ++k) {
    std::memcpy(&(*square_sums)[square_at[k]], host.data() + out_bytes + k * sizeof(double), sizeof(double));
  }
  return Status::Ok();
}

}  // namespace
}  // namespace cuda_digest

Status QueueChunkKernels(const cuda_digest::ChunkTask* tasks, size_t task_count, uint64_t* digests_out,
                         const cuda_digest::SquareTask* square_tasks, size_t square_count, double* squares_out,
                         cudaStream_t stream) {
  using namespace cuda_digest;
  if (task_count > 0x7fffffffULL || square_count > 0x7fffffffULL) {
    return InvalidArgumentError("CUDA digest: too many chunks for one grid");
  }
  if (task_count > 0) {
    ChunkTableKernel<<<dim3(static_cast<unsigned>(task_count)), kThreadsPerChunk, 0, stream>>>(tasks, digests_out);
    LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "ChunkTableKernel launch"));
  }
  if (square_count > 0) {
    ChunkSquaresKernel<<<dim3(static_cast<unsigned>(square_count)), kSquareLanes, 0, stream>>>(square_tasks,
                                                                                              squares_out);
    LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "ChunkSquaresKernel launch"));
  }
  return Status::Ok();
}

Result<std::vector<Digest128>> DigestDeviceChunks(const std::vector<DeviceBuffer>& buffers, int device,
                                                  cudaStream_t stream, std::vector<double>* chunk_square_sums) {
  std::vector<Digest128> digests;
  LOCKSTEP_RETURN_IF_ERROR(cuda_digest::RunChunkKernels(buffers, device, stream, &digests, chunk_square_sums));
  return digests;
}

Result<std::vector<double>> SquareSumDeviceChunks(const DeviceBuffer& buffer, int device, cudaStream_t stream) {
  if (buffer.squares == SquaredAs::kNone) {
    return InvalidArgumentError("CUDA digest: SquareSumDeviceChunks of a buffer whose values are not summed (kNone)");
  }
  std::vector<double> sums;
  LOCKSTEP_RETURN_IF_ERROR(cuda_digest::RunChunkKernels({buffer}, device, stream, nullptr, &sums));
  return sums;
}

}  // namespace lockstep
