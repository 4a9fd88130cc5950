// The capture pipeline's device on CUDA (capture_device.h): a non-blocking side stream for the
// captures, three events per slot ("begun" on the training stream, "reads done" and "landed" on the
// side stream), and per slot the memory its kernels need, reused from step to step and grown only
// when a step needs more (kept_cuda_memory.h). The kernels are the CUDA digest's own
// (QueueChunkKernels), so the bits are DigestDeviceChunks'.
//
// No call here waits for the device, except WaitLanded (the pipeline's backpressure and drain) and
// the destructor. Where the driver cannot allocate stream-ordered device memory (no memory pools),
// a slot's first use (or growth) falls back to cudaMalloc, which may synchronize implicitly, once.
// Built only when CUDA is found (lockstep_capture_cuda).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "harness/capture/capture_device.h"
#include "harness/capture/cuda/chunk_squares.cuh"
#include "harness/capture/cuda/kept_cuda_memory.h"

namespace lockstep {

class CudaCaptureDevice : public CaptureDevice {
 public:
  // `device`: the CUDA device the buffers are on. `training_stream`: where the training work is
  // queued (nullptr: the legacy default stream, LibTorch's default stream).
  static Result<std::unique_ptr<CudaCaptureDevice>> Create(int device, cudaStream_t training_stream);
  ~CudaCaptureDevice() override;
  CudaCaptureDevice(const CudaCaptureDevice&) = delete;
  CudaCaptureDevice& operator=(const CudaCaptureDevice&) = delete;

  Status Queue(int slot, const std::vector<CaptureBuffer>& buffers) override;
  Result<bool> Landed(int slot) override;
  Status WaitLanded(int slot) override;
  Status TrainingWaitsForReads(int slot) override;
  Status ReadResults(int slot, std::vector<Digest128>& chunk_digests, std::vector<double>& chunk_square_sums) override;

  int device() const { return device_; }
  cudaStream_t side_stream() const { return side_; }

 private:
  struct Slot {
    cudaEvent_t begun = nullptr, reads_done = nullptr, landed = nullptr;
    bool queued = false;
    KeptCudaMemory memory;  // the tables, copied in on the side stream, and the results
    size_t tasks = 0;
    std::vector<size_t> square_at;  // square task k's chunk position
  };

  CudaCaptureDevice(int device, cudaStream_t training_stream, cudaStream_t side);
  Slot& SlotAt(int slot);

  const int device_;
  const cudaStream_t training_;
  const cudaStream_t side_;
  std::vector<std::unique_ptr<Slot>> slots_;
  // Pinned memory outgrown: freed with the device, since cudaFreeHost may synchronize.
  std::vector<void*> retired_pinned_;
  std::vector<cuda_digest::ChunkTask> tasks_;        // scratch for Queue
  std::vector<cuda_digest::SquareTask> square_tasks_;
};

}  // namespace lockstep
