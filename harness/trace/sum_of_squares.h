// The sum of squares behind a tensor's L2 norm (TensorL2Norm, MakeTensorRecord, MultiTensorDigest):
// one definition, so every path that norms a tensor's bytes (floating-point, integer or bool) adds
// in the same order and gives the same bits. Each value is converted to float64, squared and added.
#pragma once

#include <cstddef>
#include <cstdint>

#include "harness/trace/half_floats.h"

namespace lockstep {

// How many partial sums: value i is added to partial sum i % kSumOfSquaresLanes. 32 (since
// 2026-11-27; 8 before) keeps eight vector additions in flight, so the loop runs at the adder's
// throughput rather than its latency: about 2x the speed of 8 on a chunk in cache with AVX-512
// (docs/PERFORMANCE.md). Changing it changes the last bits of every recorded norm.
inline constexpr size_t kSumOfSquaresLanes = 32;

// What a buffer's bytes are, for its L2 norm: values whose squares are summed as this file defines
// (on the host, or on the device by harness/capture/cuda/chunk_squares.cuh), or kNone: not summed
// so (another dtype: complex, float8; or a norm known otherwise). The one norm kind of a capture.
// Floating-point values are widened exactly; integers converted as LibTorch's `to(torch::kDouble)`
// converts them (exactly below 2^53 in magnitude, else to the nearest); a bool is 0 or 1. All but
// float32 and float64 since 2026-11-29 (docs/TRACE.md): before, their norms were LibTorch's
// reduction, a dispatch per tensor, with other last bits.
enum class SquaredAs : uint8_t {
  kNone,
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool,
};

// The size of one value of `as` (0 for kNone).
inline constexpr size_t SquaredValueBytes(SquaredAs as) {
  switch (as) {
    case SquaredAs::kNone: return 0;
    case SquaredAs::kFloat64:
    case SquaredAs::kInt64: return 8;
    case SquaredAs::kFloat32:
    case SquaredAs::kInt32: return 4;
    case SquaredAs::kFloat16:
    case SquaredAs::kBFloat16:
    case SquaredAs::kInt16: return 2;
    case SquaredAs::kInt8:
    case SquaredAs::kUInt8:
    case SquaredAs::kBool: return 1;
  }
  return 0;
}

// A bool tensor's byte: 1 when it is not zero (LibTorch's conversion of a bool), else 0.
struct BoolByte {
  uint8_t byte;
};

// Sum of squares of n values in float64: each square added to its partial sum in order, then the
// partial sums combined pairwise ((0+1)+(2+3))+... NaN and infinity propagate as in a plain sum.
double SumOfSquares(const float* p, size_t n);
double SumOfSquares(const double* p, size_t n);
double SumOfSquares(const Float16Bits* p, size_t n);
double SumOfSquares(const BFloat16Bits* p, size_t n);
double SumOfSquares(const int64_t* p, size_t n);
double SumOfSquares(const int32_t* p, size_t n);
double SumOfSquares(const int16_t* p, size_t n);
double SumOfSquares(const int8_t* p, size_t n);
double SumOfSquares(const uint8_t* p, size_t n);
double SumOfSquares(const BoolByte* p, size_t n);
// The same of `nbytes` bytes of `as` values (a whole number of them); 0 for kNone.
double SumOfSquaresOfBytes(SquaredAs as, const void* p, size_t nbytes);

// The same sum fed in pieces: AddSquares on each piece in order, every piece but the last a
// multiple of kSumOfSquaresLanes values long (so that value i still lands in partial sum
// i mod kSumOfSquaresLanes), then Total gives SumOfSquares of the whole, bit for bit.
struct SquareLanes {
  double acc[kSumOfSquaresLanes] = {};
};
void AddSquares(const float* p, size_t n, SquareLanes& lanes);
void AddSquares(const double* p, size_t n, SquareLanes& lanes);
void AddSquares(const Float16Bits* p, size_t n, SquareLanes& lanes);
void AddSquares(const BFloat16Bits* p, size_t n, SquareLanes& lanes);
void AddSquares(const int64_t* p, size_t n, SquareLanes& lanes);
void AddSquares(const int32_t* p, size_t n, SquareLanes& lanes);
void AddSquares(const int16_t* p, size_t n, SquareLanes& lanes);
void AddSquares(const int8_t* p, size_t n, SquareLanes& lanes);
void AddSquares(const uint8_t* p, size_t n, SquareLanes& lanes);
void AddSquares(const BoolByte* p, size_t n, SquareLanes& lanes);
// AddSquares of `nbytes` bytes of `as` values; nothing for kNone.
void AddSquaresOfBytes(SquaredAs as, const void* p, size_t nbytes, SquareLanes& lanes);
double Total(const SquareLanes& lanes);

}  // namespace lockstep
