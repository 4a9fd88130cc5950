// The CUDA digest: a kernel for level 1 (one thread block per 1 MiB chunk; the split is described
// in digest_kernel.cuh), one for the norms' sums of squares (a thread block per chunk too,
// chunk_squares.cuh), and the host API of cuda_digest.h around them.
#include "harness/capture/cuda/cuda_digest.h"
#include "harness/capture/cuda/on_device.h"
#include "harness/capture/cuda/queued_chunk_kernels.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "harness/capture/cuda/chunk_squares.cuh"
#include "harness/capture/cuda/digest_kernel.cuh"
#include "harness/capture/cuda/kept_cuda_memory.h"
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

// Partial sum `lane` (for the threads of warp 0) of one chunk of `count` values of T, the chunk
// passing through `tiles` (two of kSquareTileBytes) a tile at a time (chunk_squares.cuh). Every
// thread of the block calls it: it has barriers.
template <typename T>
__device__ double BlockLaneSquareSum(const uint8_t* data, size_t count, uint8_t* tiles) {
  const T* values = reinterpret_cast<const T*>(data);
  const int t = static_cast<int>(threadIdx.x);
  constexpr size_t kTile = kTileValues<T>;
  double acc = 0.0;
  int half = 0;
  for (size_t first = 0; first < count; first += kTile, half ^= 1) {
    T* tile = reinterpret_cast<T*>(tiles + half * kSquareTileBytes);
    const size_t n = count - first < kTile ? count - first : kTile;
    // Warps 1-7 may run a tile ahead of warp 0, into the other half: to come back to this half
    // they pass the next barrier, which warp 0 reaches only after adding this tile.
    LoadTileShare(values + first, n, tile, t);
    __syncthreads();
    if (t < kSquareLanes) acc = LaneSquareSumOfTile(tile, n, t, acc);
  }
  return acc;
}

// One thread block per task: the chunk's sum of squares in the norm's order (chunk_squares.cuh),
// lane L of warp 0 being partial sum L; its lane 0 combines the 32 as the CPU's Total does.
__global__ void __launch_bounds__(kSquareThreads) ChunkSquaresKernel(const SquareTask* tasks, double* out) {
  __shared__ __align__(16) uint8_t tiles[2 * kSquareTileBytes];
  __shared__ double lanes[kSquareLanes];
  const SquareTask task = tasks[blockIdx.x];
  double sum = 0.0;
  switch (task.as) {
    case SquaredAs::kFloat64: sum = BlockLaneSquareSum<double>(task.data, task.count, tiles); break;
    case SquaredAs::kFloat32: sum = BlockLaneSquareSum<float>(task.data, task.count, tiles); break;
    case SquaredAs::kFloat16: sum = BlockLaneSquareSum<Float16Bits>(task.data, task.count, tiles); break;
    case SquaredAs::kBFloat16: sum = BlockLaneSquareSum<BFloat16Bits>(task.data, task.count, tiles); break;
    case SquaredAs::kInt64: sum = BlockLaneSquareSum<int64_t>(task.data, task.count, tiles); break;
    case SquaredAs::kInt32: sum = BlockLaneSquareSum<int32_t>(task.data, task.count, tiles); break;
    case SquaredAs::kInt16: sum = BlockLaneSquareSum<int16_t>(task.data, task.count, tiles); break;
    case SquaredAs::kInt8: sum = BlockLaneSquareSum<int8_t>(task.data, task.count, tiles); break;
    case SquaredAs::kUInt8: sum = BlockLaneSquareSum<uint8_t>(task.data, task.count, tiles); break;
    case SquaredAs::kBool: sum = BlockLaneSquareSum<BoolByte>(task.data, task.count, tiles); break;
    case SquaredAs::kNone: break;  // no task is made for it (AppendSquareTasks)
  }
  const int t = static_cast<int>(threadIdx.x);
  if (t < kSquareLanes) {
    lanes[t] = sum;
    __syncwarp();
    if (t == 0) out[blockIdx.x] = PairwiseTotal(lanes);
  }
}

Status CudaStatus(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return Status::Ok();
  return InternalError(std::string("CUDA digest: ") + call + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// The synchronous calls' memory, one per device, kept for the process's life: a call allocates
// nothing once the calls of a run have reached their size (an allocation per call costs a mapping
// per call: CUDA's default pool gives its memory back at every synchronization). Each call holds
// its device's memory until it has synchronized, so calls from several threads take turns. Never
// freed: CUDA may be torn down before static destructors run.
struct CallMemory {
  std::mutex mu;
  KeptCudaMemory memory;
};

CallMemory& CallMemoryOf(int device) {
  static std::mutex mu;
  static auto* by_device = new std::map<int, std::unique_ptr<CallMemory>>();
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<CallMemory>& m = (*by_device)[device];
  if (!m) m = std::make_unique<CallMemory>();
  return *m;
}

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

  int device = 0;
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  cuda_digest::CallMemory& call = cuda_digest::CallMemoryOf(device);
  std::lock_guard<std::mutex> lock(call.mu);
  const size_t out_bytes = chunks * 2 * sizeof(uint64_t);
  LOCKSTEP_RETURN_IF_ERROR(call.memory.Reserve(0, out_bytes, stream, nullptr));
  auto* out = reinterpret_cast<uint64_t*>(call.memory.device());

  const dim3 grid(static_cast<unsigned>(chunks));
  if (reinterpret_cast<uintptr_t>(data) % 16 == 0) {
    cuda_digest::ChunkDigestKernel<true><<<grid, cuda_digest::kThreadsPerChunk, 0, stream>>>(data, nbytes, out);
  } else {
    cuda_digest::ChunkDigestKernel<false><<<grid, cuda_digest::kThreadsPerChunk, 0, stream>>>(data, nbytes, out);
  }
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "ChunkDigestKernel launch"));
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(call.memory.host_results(), out, out_bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync"));
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  std::vector<uint64_t> host(chunks * 2);
  std::memcpy(host.data(), call.memory.host_results(), out_bytes);
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
// digested too, else one per chunk of the marked buffers). The device's kept memory, the tables
// copied in, the results copied back with one copy, one synchronization.
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

  // The device's kept memory: the two tables, then the two outputs (all 8-byte aligned: a task is
  // 16 bytes), the outputs next to each other so that one copy brings both back.
  const size_t table_bytes = tasks.size() * sizeof(ChunkTask);
  const size_t square_table_bytes = square_tasks.size() * sizeof(SquareTask);
  const size_t out_bytes = tasks.size() * 2 * sizeof(uint64_t);
  const size_t square_out_bytes = square_tasks.size() * sizeof(double);
  CallMemory& call = CallMemoryOf(device);
  std::lock_guard<std::mutex> lock(call.mu);
  KeptCudaMemory& memory = call.memory;
  LOCKSTEP_RETURN_IF_ERROR(
      memory.Reserve(table_bytes + square_table_bytes, out_bytes + square_out_bytes, stream, nullptr));
  std::memcpy(memory.host_tables(), tasks.data(), table_bytes);
  std::memcpy(memory.host_tables() + table_bytes, square_tasks.data(), square_table_bytes);
  uint8_t* table = memory.device();
  uint8_t* results = table + table_bytes + square_table_bytes;
  auto queue = [&]() -> Status {
    LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(table, memory.host_tables(),
                                                        table_bytes + square_table_bytes, cudaMemcpyHostToDevice,
                                                        stream),
                                        "cudaMemcpyAsync (tables)"));
    LOCKSTEP_RETURN_IF_ERROR(QueueChunkKernels(reinterpret_cast<const ChunkTask*>(table), tasks.size(),
                                               reinterpret_cast<uint64_t*>(results),
                                               reinterpret_cast<const SquareTask*>(table + table_bytes),
                                               square_tasks.size(), reinterpret_cast<double*>(results + out_bytes),
                                               stream));
    return CudaStatus(cudaMemcpyAsync(memory.host_results(), results, out_bytes + square_out_bytes,
                                      cudaMemcpyDeviceToHost, stream),
                      "cudaMemcpyAsync (results)");
  };
  const Status queued = queue();
  // The next call reuses the kept memory: whatever was queued, failed or not, is waited for.
  const Status synced = CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  LOCKSTEP_RETURN_IF_ERROR(queued);
  LOCKSTEP_RETURN_IF_ERROR(synced);
  const uint8_t* host = memory.host_results();
  if (digests) {
    std::vector<uint64_t> words(tasks.size() * 2);
    std::memcpy(words.data(), host, out_bytes);
    *digests = ChunkDigests(words);
  }
  for (size_t k = 0; k < square_tasks.size(); ++k) {
    std::memcpy(&(*square_sums)[square_at[k]], host + out_bytes + k * sizeof(double), sizeof(double));
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
    ChunkSquaresKernel<<<dim3(static_cast<unsigned>(square_count)), kSquareThreads, 0, stream>>>(square_tasks,
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
