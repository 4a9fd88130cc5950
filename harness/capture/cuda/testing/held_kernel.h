// A kernel that holds a stream until the host lets it go, for the GPU tests of the asynchronous
// capture: a call that waited for the device while it is held would wait until the kernel gives
// up (after about `give_up_cycles` GPU clock cycles) and the test sees that it gave up. No time is
// measured on the path that passes.
#pragma once

#include <cuda_runtime_api.h>

#include "harness/core/status.h"

namespace lockstep {
namespace testing {

class HeldKernel {
 public:
  HeldKernel() = default;
  ~HeldKernel();
  HeldKernel(const HeldKernel&) = delete;
  HeldKernel& operator=(const HeldKernel&) = delete;

  // Queues the kernel on `stream`; it spins until Release() or until it gives up.
  Status Launch(cudaStream_t stream, long long give_up_cycles);
  void Release();
  // After the kernel ended: whether it gave up instead of being released.
  bool GaveUp() const;

 private:
  volatile int* flags_ = nullptr;  // mapped pinned memory: [0] released, [1] gave up
};

}  // namespace testing
}  // namespace lockstep
