// The memory a CUDA capture's kernels need, kept from capture to capture: pinned host memory for
// the task tables and for the results, and device memory for both, grown (at least doubling) only
// when a capture needs more. Each slot of the asynchronous capture (cuda_capture_device.h) has
// one, and the synchronous DigestDeviceChunks one per device: a capture then allocates nothing,
// and its copies run from and to pinned memory, which CUDA does not stage through a bounce buffer.
// Built only when CUDA is found (lockstep_cuda_digest).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/core/status.h"

namespace lockstep {

class KeptCudaMemory {
 public:
  KeptCudaMemory() = default;
  KeptCudaMemory(const KeptCudaMemory&) = delete;
  KeptCudaMemory& operator=(const KeptCudaMemory&) = delete;

  // Room for `table_bytes` of tables and `result_bytes` of results, on the calling thread's current
  // device, which must be the device of the memory kept so far. Nothing queued may still use the
  // memory. Device memory is stream-ordered on `stream` where the driver has memory pools
  // (cudaMalloc otherwise, which may synchronize the device: at a growth only). Outgrown pinned
  // memory goes to `retired`, for a caller that must never wait for the device (cudaFreeHost may
  // synchronize it), or is freed at once when `retired` is null.
  Status Reserve(size_t table_bytes, size_t result_bytes, cudaStream_t stream, std::vector<void*>* retired);
  // Frees it all, the device memory ordered on `stream`; nothing queued may still use it.
  void Free(cudaStream_t stream);

  uint8_t* host_tables() const { return host_tables_; }
  uint8_t* host_results() const { return host_results_; }
  // The tables (`table_bytes` of the last Reserve), then the results.
  uint8_t* device() const { return static_cast<uint8_t*>(device_); }

 private:
  uint8_t* host_tables_ = nullptr;
  size_t host_tables_bytes_ = 0;
  uint8_t* host_results_ = nullptr;
  size_t host_results_bytes_ = 0;
  void* device_ = nullptr;
  size_t device_bytes_ = 0;
  bool device_pooled_ = true;  // from cudaMallocAsync (else cudaMalloc)
};

}  // namespace lockstep
