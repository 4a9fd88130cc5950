// The current CUDA device set for a scope: a kernel on another device could not read the buffers
// without peer access. Shared by the digest kernels and the capture device (harness/capture/cuda).
#pragma once

#include <cuda_runtime.h>

namespace lockstep {

// On `device` from Enter until the end of the scope; the caller's device is restored after.
class OnDevice {
 public:
  OnDevice() = default;
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
  ~OnDevice() {
    if (switched_) cudaSetDevice(previous_);
  }
  // cudaSuccess, or the error of cudaGetDevice or cudaSetDevice.
  cudaError_t Enter(int device) {
    if (cudaError_t e = cudaGetDevice(&previous_); e != cudaSuccess) return e;
    if (previous_ == device) return cudaSuccess;
    const cudaError_t e = cudaSetDevice(device);
    switched_ = e == cudaSuccess;
    return e;
  }

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace lockstep
