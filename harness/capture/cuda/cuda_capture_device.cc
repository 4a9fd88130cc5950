#include "harness/capture/cuda/cuda_capture_device.h"

#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "harness/capture/cuda/on_device.h"
#include "harness/capture/cuda/queued_chunk_kernels.h"

namespace lockstep {
namespace {

Status CudaStatus(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return Status::Ok();
  return InternalError(std::string("CUDA capture: ") + call + ": " + cudaGetErrorName(e) + ": " +
                       cudaGetErrorString(e));
}

static_assert(sizeof(cuda_digest::ChunkTask) % 8 == 0 && sizeof(cuda_digest::SquareTask) % 8 == 0,
              "tables keep the results behind them 8-byte aligned");

}  // namespace

Result<std::unique_ptr<CudaCaptureDevice>> CudaCaptureDevice::Create(int device, cudaStream_t training_stream) {
  OnDevice on;
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(on.Enter(device), "cudaSetDevice"));
  // Non-blocking: no implicit ordering with the legacy default stream, whose work the capture
  // orders itself after with an event, and which must not wait for every capture.
  cudaStream_t side = nullptr;
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"));
  return std::unique_ptr<CudaCaptureDevice>(new CudaCaptureDevice(device, training_stream, side));
}

CudaCaptureDevice::CudaCaptureDevice(int device, cudaStream_t training_stream, cudaStream_t side)
    : device_(device), training_(training_stream), side_(side) {}

CudaCaptureDevice::~CudaCaptureDevice() {
  OnDevice on;
  (void)on.Enter(device_);
  // Nothing may be freed under a copy or kernel still queued: the one wait outside WaitLanded.
  cudaStreamSynchronize(side_);
  for (auto& s : slots_) {
    if (s->begun) cudaEventDestroy(s->begun);
    if (s->reads_done) cudaEventDestroy(s->reads_done);
    if (s->landed) cudaEventDestroy(s->landed);
    s->memory.Free(side_);
  }
  for (void* p : retired_pinned_) cudaFreeHost(p);
  cudaStreamSynchronize(side_);
  cudaStreamDestroy(side_);
}

CudaCaptureDevice::Slot& CudaCaptureDevice::SlotAt(int slot) {
  while (slots_.size() <= static_cast<size_t>(slot)) slots_.push_back(std::make_unique<Slot>());
  return *slots_[static_cast<size_t>(slot)];
}

Status CudaCaptureDevice::Queue(int slot, const std::vector<CaptureBuffer>& buffers) {
  OnDevice on;
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(on.Enter(device_), "cudaSetDevice"));
  Slot& s = SlotAt(slot);
  if (s.begun == nullptr) {
    for (cudaEvent_t* e : {&s.begun, &s.reads_done, &s.landed}) {
      LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreateWithFlags"));
    }
  }
  // The tables, as DigestDeviceChunks builds them: one digest task per chunk of every buffer, one
  // square task per chunk of the summed ones, at the digest's chunk position.
  tasks_.clear();
  square_tasks_.clear();
  s.square_at.clear();
  for (const CaptureBuffer& b : buffers) {
    const auto* data = static_cast<const uint8_t*>(b.data);
    const size_t first_chunk = tasks_.size();
    cuda_digest::AppendChunkTasks(data, b.nbytes, tasks_);
    if (b.squares != SquaredAs::kNone && b.nbytes > 0) {
      const size_t value = SquaredValueBytes(b.squares);
      if (reinterpret_cast<uintptr_t>(data) % value != 0 || b.nbytes % value != 0) {
        return InvalidArgumentError("CUDA capture: a buffer of " + std::to_string(value) +
                                    "-byte values is not aligned to them");
      }
      const size_t before = square_tasks_.size();
      cuda_digest::AppendSquareTasks(data, b.nbytes, b.squares, square_tasks_);
      for (size_t k = before; k < square_tasks_.size(); ++k) s.square_at.push_back(first_chunk + (k - before));
    }
  }
  s.tasks = tasks_.size();
  const size_t chunk_table = tasks_.size() * sizeof(cuda_digest::ChunkTask);
  const size_t square_table = square_tasks_.size() * sizeof(cuda_digest::SquareTask);
  const size_t digests_bytes = tasks_.size() * 2 * sizeof(uint64_t);
  const size_t squares_bytes = square_tasks_.size() * sizeof(double);
  // The slot has landed (the pipeline's contract): nothing queued reads its memory any more.
  LOCKSTEP_RETURN_IF_ERROR(
      s.memory.Reserve(chunk_table + square_table, digests_bytes + squares_bytes, side_, &retired_pinned_));
  uint8_t* host_tables = s.memory.host_tables();
  std::memcpy(host_tables, tasks_.data(), chunk_table);
  std::memcpy(host_tables + chunk_table, square_tasks_.data(), square_table);
  uint8_t* device = s.memory.device();
  const auto* device_tasks = reinterpret_cast<const cuda_digest::ChunkTask*>(device);
  const auto* device_square_tasks = reinterpret_cast<const cuda_digest::SquareTask*>(device + chunk_table);
  uint8_t* device_results = device + chunk_table + square_table;

  // The tables go in first: they read no tensor, so they need not wait for the training stream.
  if (chunk_table + square_table > 0) {
    LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(device, host_tables, chunk_table + square_table,
                                                        cudaMemcpyHostToDevice, side_),
                                        "cudaMemcpyAsync (tables)"));
  }
  // What the training stream queued before this point is what the kernels read.
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(s.begun, training_), "cudaEventRecord (begun)"));
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(side_, s.begun, 0), "cudaStreamWaitEvent (begun)"));
  LOCKSTEP_RETURN_IF_ERROR(QueueChunkKernels(device_tasks, tasks_.size(), reinterpret_cast<uint64_t*>(device_results),
                                             device_square_tasks, square_tasks_.size(),
                                             reinterpret_cast<double*>(device_results + digests_bytes), side_));
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(s.reads_done, side_), "cudaEventRecord (reads done)"));
  if (digests_bytes + squares_bytes > 0) {
    LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(s.memory.host_results(), device_results, digests_bytes + squares_bytes,
                                                        cudaMemcpyDeviceToHost, side_),
                                        "cudaMemcpyAsync (results)"));
  }
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(s.landed, side_), "cudaEventRecord (landed)"));
  s.queued = true;
  return Status::Ok();
}

Result<bool> CudaCaptureDevice::Landed(int slot) {
  Slot& s = SlotAt(slot);
  if (!s.queued) return false;
  const cudaError_t e = cudaEventQuery(s.landed);
  if (e == cudaSuccess) return true;
  if (e == cudaErrorNotReady) return false;
  return CudaStatus(e, "cudaEventQuery (landed)");
}

Status CudaCaptureDevice::WaitLanded(int slot) {
  Slot& s = SlotAt(slot);
  if (!s.queued) return InternalError("CUDA capture: waiting for a slot never queued");
  return CudaStatus(cudaEventSynchronize(s.landed), "cudaEventSynchronize (landed)");
}

Status CudaCaptureDevice::TrainingWaitsForReads(int slot) {
  Slot& s = SlotAt(slot);
  if (!s.queued) return InternalError("CUDA capture: guarding a slot never queued");
  OnDevice on;
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(on.Enter(device_), "cudaSetDevice"));
  return CudaStatus(cudaStreamWaitEvent(training_, s.reads_done, 0), "cudaStreamWaitEvent (reads done)");
}

Status CudaCaptureDevice::ReadResults(int slot, std::vector<Digest128>& chunk_digests,
                                      std::vector<double>& chunk_square_sums) {
  Slot& s = SlotAt(slot);
  if (!s.queued) return InternalError("CUDA capture: reading a slot never queued");
  chunk_digests.resize(s.tasks);
  const uint8_t* words = s.memory.host_results();
  for (size_t c = 0; c < s.tasks; ++c) {
    uint64_t low, high;
    std::memcpy(&low, words + 16 * c, 8);
    std::memcpy(&high, words + 16 * c + 8, 8);
    chunk_digests[c] = Digest128{high, low};
  }
  chunk_square_sums.assign(s.tasks, 0.0);
  const uint8_t* sums = s.memory.host_results() + s.tasks * 16;
  for (size_t k = 0; k < s.square_at.size(); ++k) std::memcpy(&chunk_square_sums[s.square_at[k]], sums + 8 * k, 8);
  s.queued = false;
  return Status::Ok();
}

}  // namespace lockstep
