#include "harness/capture/cuda/testing/held_kernel.h"

#include <cuda_runtime.h>

#include <string>

namespace lockstep {
namespace testing {
namespace {

__global__ void HoldUntilReleased(volatile int* flags, long long give_up_cycles) {
  const long long start = clock64();
  while (flags[0] == 0) {
    if (clock64() - start > give_up_cycles) {
      flags[1] = 1;
      __threadfence_system();
      return;
    }
  }
}

}  // namespace

HeldKernel::~HeldKernel() {
  if (flags_ != nullptr) cudaFreeHost(const_cast<int*>(flags_));
}

Status HeldKernel::Launch(cudaStream_t stream, long long give_up_cycles) {
  if (flags_ == nullptr) {
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocMapped);
    if (e != cudaSuccess) return InternalError(std::string("cudaHostAlloc: ") + cudaGetErrorString(e));
    flags_ = static_cast<volatile int*>(p);
  }
  flags_[0] = 0;
  flags_[1] = 0;
  void* device_flags = nullptr;
  cudaError_t e = cudaHostGetDevicePointer(&device_flags, const_cast<int*>(flags_), 0);
  if (e != cudaSuccess) return InternalError(std::string("cudaHostGetDevicePointer: ") + cudaGetErrorString(e));
  HoldUntilReleased<<<1, 1, 0, stream>>>(static_cast<volatile int*>(device_flags), give_up_cycles);
  e = cudaGetLastError();
  if (e != cudaSuccess) return InternalError(std::string("HoldUntilReleased launch: ") + cudaGetErrorString(e));
  return Status::Ok();
}

void HeldKernel::Release() { flags_[0] = 1; }

bool HeldKernel::GaveUp() const { return flags_[1] != 0; }

}  // namespace testing
}  // namespace lockstep
