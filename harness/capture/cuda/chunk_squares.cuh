// The sum of squares behind a CUDA tensor's L2 norm, on the device, in the CPU's order: per 1 MiB
// chunk, value i of the chunk into partial sum i % 32, each partial sum in order, the 32 combined
// pairwise (harness/trace/sum_of_squares.h is the definition). So a float32/float64 tensor's norm is
// the same bits on the GPU as on the CPU, and one launch norms every tensor of a step (issue 38)
// where LibTorch's reduction took a launch per tensor. float16 and bfloat16 values (since
// 2026-11-29) are widened through float32 by harness/trace/half_floats.h, as the CPU widens them;
// integers and bools (the same day) converted as the CPU converts them.
//
// One warp per chunk: lane L of the warp is partial sum L. The warp's 32 lanes read one coalesced
// row of 32 values per step (64 bytes of 16-bit values, 128 of float32, 256 of float64), and lane
// L adds its values L, L+32, ... in order, as the CPU's vector lane L does. The additions of a lane
// depend on each other; the warps of other chunks hide that.
//
// The per-lane work is written here as host/device functions, so digest_kernel_test.cc runs the
// very same steps on the CPU and checks them against SumOfSquares bit for bit; digest_kernel.cu
// only maps CUDA threads onto them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/capture/cuda/digest_kernel.cuh"
#include "harness/trace/half_floats.h"
#include "harness/trace/sum_of_squares.h"

namespace lockstep {
namespace cuda_digest {

constexpr int kSquareLanes = static_cast<int>(kSumOfSquaresLanes);  // one warp
static_assert(kSquareLanes == 32, "one partial sum per lane of a warp");

using ::lockstep::SquaredAs;  // sum_of_squares.h

// Multiply and add rounded separately: the CPU's definition is unfused, and nvcc would otherwise
// contract `acc + v * v` into one FMA (other bits for float64 values).
LOCKSTEP_HD double AddRounded(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

LOCKSTEP_HD double MulRounded(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// A read-only load: on the device through the read-only data cache (__ldg).
template <typename T>
LOCKSTEP_HD T LoadRaw(const T* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

// A value as float64, as the CPU's loop converts it (sum_of_squares.cc: AsDouble, and half_floats.h's
// ToFloat for the 16-bit types).
template <typename T>
LOCKSTEP_HD double LoadValue(const T* p) {
  return static_cast<double>(LoadRaw(p));
}
LOCKSTEP_HD double LoadValue(const BFloat16Bits* p) {
  return static_cast<double>(ToFloat(BFloat16Bits{LoadRaw(&p->bits)}));
}
LOCKSTEP_HD double LoadValue(const Float16Bits* p) {
  return static_cast<double>(ToFloat(Float16Bits{LoadRaw(&p->bits)}));
}
LOCKSTEP_HD double LoadValue(const BoolByte* p) { return LoadRaw(&p->byte) != 0 ? 1.0 : 0.0; }

// Partial sum `lane` of a chunk of `count` values: the squares of values lane, lane + 32, ... in
// order, from 0.
template <typename T>
LOCKSTEP_HD double LaneSquareSum(const T* values, size_t count, int lane) {
  double acc = 0.0;
#if defined(__CUDA_ARCH__)
#pragma unroll 8
#endif
  for (size_t i = static_cast<size_t>(lane); i < count; i += kSquareLanes) {
    const double v = LoadValue(values + i);
    acc = AddRounded(acc, MulRounded(v, v));
  }
  return acc;
}

// The 32 partial sums combined as Total (sum_of_squares.cc) does: (0+1), (2+3), ..., then those
// pairwise, down to one. Overwrites `acc`.
LOCKSTEP_HD double PairwiseTotal(double* acc) {
  for (int width = kSquareLanes / 2; width >= 1; width /= 2) {
    for (int k = 0; k < width; ++k) acc[k] = AddRounded(acc[2 * k], acc[2 * k + 1]);
  }
  return acc[0];
}

// One warp's work in a launch: the sum of squares of one chunk of one buffer.
struct SquareTask {
  const uint8_t* data;  // the chunk's first value, aligned to its size
  uint32_t count;       // values in the chunk (at most kChunkBytes / 4)
  SquaredAs as;
};

// Appends one task per chunk of a buffer of `nbytes` bytes of `as` values (none for an empty
// buffer: its norm is 0), the chunks being the digest's (kChunkBytes each).
inline void AppendSquareTasks(const uint8_t* data, size_t nbytes, SquaredAs as, std::vector<SquareTask>& tasks) {
  if (as == SquaredAs::kNone || nbytes == 0) return;
  for (size_t c = 0; c < DigestChunkCount(nbytes); ++c) {
    tasks.push_back(
        SquareTask{data + c * kChunkBytes,
                   static_cast<uint32_t>(DigestChunkLength(nbytes, c) / SquaredValueBytes(as)), as});
  }
}

}  // namespace cuda_digest
}  // namespace lockstep
