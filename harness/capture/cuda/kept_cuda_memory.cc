#include "harness/capture/cuda/kept_cuda_memory.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

namespace lockstep {
namespace {

Status CudaStatus(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return Status::Ok();
  return InternalError(std::string("CUDA capture memory: ") + call + ": " + cudaGetErrorName(e) + ": " +
                       cudaGetErrorString(e));
}

// Room for `needed` bytes, at least doubling, so a run's growing steps reallocate a few times only.
size_t Grown(size_t have, size_t needed) { return std::max(needed, have * 2); }

Status GrowPinned(uint8_t*& p, size_t& have, size_t needed, std::vector<void*>* retired, const char* call) {
  if (have >= needed) return Status::Ok();
  const size_t bytes = Grown(have, needed);
  if (p != nullptr) {
    if (retired != nullptr) {
      retired->push_back(p);
    } else {
      cudaFreeHost(p);
    }
  }
  p = nullptr;
  have = 0;
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(cudaHostAlloc(reinterpret_cast<void**>(&p), bytes, cudaHostAllocDefault), call));
  have = bytes;
  return Status::Ok();
}

}  // namespace

Status KeptCudaMemory::Reserve(size_t table_bytes, size_t result_bytes, cudaStream_t stream,
                               std::vector<void*>* retired) {
  LOCKSTEP_RETURN_IF_ERROR(GrowPinned(host_tables_, host_tables_bytes_, table_bytes, retired, "cudaHostAlloc (tables)"));
  LOCKSTEP_RETURN_IF_ERROR(
      GrowPinned(host_results_, host_results_bytes_, result_bytes, retired, "cudaHostAlloc (results)"));
  const size_t device_needed = table_bytes + result_bytes;
  if (device_bytes_ >= device_needed) return Status::Ok();
  if (device_ != nullptr) {
    // Stream-ordered: freed after the stream's earlier work, and nothing else still uses it.
    LOCKSTEP_RETURN_IF_ERROR(
        CudaStatus(device_pooled_ ? cudaFreeAsync(device_, stream) : cudaFree(device_), "cudaFreeAsync"));
    device_ = nullptr;
  }
  const size_t bytes = Grown(device_bytes_, device_needed);
  device_bytes_ = 0;
  cudaError_t e = cudaMallocAsync(&device_, bytes, stream);
  device_pooled_ = true;
  if (e == cudaErrorNotSupported) {
    cudaGetLastError();
    device_pooled_ = false;
    e = cudaMalloc(&device_, bytes);
  }
  LOCKSTEP_RETURN_IF_ERROR(CudaStatus(e, device_pooled_ ? "cudaMallocAsync" : "cudaMalloc"));
  device_bytes_ = bytes;
  return Status::Ok();
}

void KeptCudaMemory::Free(cudaStream_t stream) {
  if (host_tables_ != nullptr) cudaFreeHost(host_tables_);
  if (host_results_ != nullptr) cudaFreeHost(host_results_);
  if (device_ != nullptr) device_pooled_ ? cudaFreeAsync(device_, stream) : cudaFree(device_);
  host_tables_ = host_results_ = nullptr;
  device_ = nullptr;
  host_tables_bytes_ = host_results_bytes_ = device_bytes_ = 0;
}

}  // namespace lockstep
