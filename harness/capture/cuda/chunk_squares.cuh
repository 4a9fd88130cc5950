// The sum of squares behind a CUDA tensor's L2 norm, on the device, in the CPU's order: per 1 MiB
// chunk, value i of the chunk into partial sum i % 32, each partial sum in order, the 32 combined
// pairwise (harness/trace/sum_of_squares.h is the definition). So a float32/float64 tensor's norm is
// the same bits on the GPU as on the CPU, and one launch norms every tensor of a step (issue 38)
// where LibTorch's reduction took a launch per tensor. float16 and bfloat16 values (since
// 2026-11-29) are widened through float32 by harness/trace/half_floats.h, as the CPU widens them;
// integers and bools (the same day) converted as the CPU converts them.
//
// One thread block per chunk. The chunk goes through shared memory a tile (16 KiB, 4096 values at
// most) at a time: the block's 256 threads load a tile, each thread its share of independent
// loads, all in flight at once; then warp 0's lane L adds the tile's values L, L+32, ... in order,
// as the CPU's vector lane L does, while the other warps load the next tile into the other half.
// The additions of a lane depend on each other, and only their order is the definition: the order
// of the loads is free. One warp reading its chunk alone keeps too few loads in flight where a
// step has fewer chunks than the GPU has SMs (docs/PERFORMANCE.md, the GPU's profiles).
//
// The per-thread work is written here as host/device functions, so digest_kernel_test.cc runs the
// very same steps on the CPU, tile by tile, and checks them against SumOfSquares bit for bit;
// digest_kernel.cu only maps CUDA threads onto them and puts the barriers between them.
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
LOCKSTEP_HD BFloat16Bits LoadRaw(const BFloat16Bits* p) { return BFloat16Bits{LoadRaw(&p->bits)}; }
LOCKSTEP_HD Float16Bits LoadRaw(const Float16Bits* p) { return Float16Bits{LoadRaw(&p->bits)}; }
LOCKSTEP_HD BoolByte LoadRaw(const BoolByte* p) { return BoolByte{LoadRaw(&p->byte)}; }

// A value as float64, as the CPU's loop converts it (sum_of_squares.cc: AsDouble, and half_floats.h's
// ToFloat for the 16-bit types).
template <typename T>
LOCKSTEP_HD double AsFloat64(T v) {
  return static_cast<double>(v);
}
LOCKSTEP_HD double AsFloat64(BFloat16Bits v) { return static_cast<double>(ToFloat(v)); }
LOCKSTEP_HD double AsFloat64(Float16Bits v) { return static_cast<double>(ToFloat(v)); }
LOCKSTEP_HD double AsFloat64(BoolByte v) { return v.byte != 0 ? 1.0 : 0.0; }

// The block of a chunk: kSquareThreads threads load each tile, warp 0 (the 32 partial sums) adds it.
constexpr int kSquareThreads = 256;
constexpr size_t kSquareTileBytes = 16384;    // two tiles in shared memory: 32 KiB a block
constexpr size_t kSquareLoadsPerThread = 16;  // a thread's loads of a tile, each held in a register

// Values of T in a tile: a multiple of the 32 lanes and of the block's threads, so a tile ends at a
// row's end and every thread loads the same count of every full tile; at most 16 loads a thread (a
// tile of 1-byte values is 4 KiB), or the kernel runs out of registers for the other blocks.
// A variable, not a function: device code may read a constexpr variable, but calls a constexpr host
// function only under nvcc's --expt-relaxed-constexpr, which the probe's pip build does not pass.
template <typename T>
constexpr size_t kTileValues = kSquareTileBytes / sizeof(T) < kSquareLoadsPerThread * kSquareThreads
                                   ? kSquareTileBytes / sizeof(T)
                                   : kSquareLoadsPerThread * kSquareThreads;

// Thread `thread`'s share of loading a tile of `n` values (at most kTileValues<T>) from `values`
// into `tile`: its values thread, thread + kSquareThreads, ..., every load issued before the first
// store, so that all of them are in flight at once.
template <typename T>
LOCKSTEP_HD void LoadTileShare(const T* values, size_t n, T* tile, int thread) {
  constexpr int kPerThread = static_cast<int>(kTileValues<T>) / kSquareThreads;
  static_assert(kTileValues<T> % kSquareThreads == 0 && kTileValues<T> % kSquareLanes == 0,
                "a tile is whole rows, shared evenly by the threads");
  T loaded[kPerThread]{};
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 0; k < kPerThread; ++k) {
    const size_t i = static_cast<size_t>(thread) + static_cast<size_t>(k) * kSquareThreads;
    if (i < n) loaded[k] = LoadRaw(values + i);
  }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 0; k < kPerThread; ++k) {
    const size_t i = static_cast<size_t>(thread) + static_cast<size_t>(k) * kSquareThreads;
    if (i < n) tile[i] = loaded[k];
  }
}

// Partial sum `lane` carried through one tile of `n` values: the squares of the tile's values
// lane, lane + 32, ... added to `acc` in order. A chunk's tiles one after another, from 0, give
// the partial sum of the chunk's values lane, lane + 32, ...: tiles are whole rows of 32.
template <typename T>
LOCKSTEP_HD double LaneSquareSumOfTile(const T* tile, size_t n, int lane, double acc) {
  for (size_t i = static_cast<size_t>(lane); i < n; i += kSquareLanes) {
    const double v = AsFloat64(tile[i]);
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

// One thread block's work in a launch: the sum of squares of one chunk of one buffer.
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
