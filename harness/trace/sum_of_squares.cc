#include "harness/trace/sum_of_squares.h"

namespace lockstep {
namespace {

// GCC and Clang build AVX-512 and AVX2 copies next to the baseline one and pick one at load time.
// All give the same bits: the partial sums are kept lane for lane (no reassociation), and
// multiply and add stay unfused (-ffp-contract=off for this file, harness/trace/CMakeLists.txt:
// AVX-512 implies FMA, which Clang would otherwise contract `acc += v * v` into).
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && defined(__linux__)
#define LOCKSTEP_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define LOCKSTEP_INLINE_INTO_CLONE __attribute__((always_inline))
#else
#define LOCKSTEP_SIMD_CLONES
#define LOCKSTEP_INLINE_INTO_CLONE
#endif

// Inlined into each clone, so that each clone's copy is compiled for its instruction set. The
// partial sums are copied in and out: kept in a local array, they stay in registers (a double* that
// may alias `p` would have to be stored after every addition).
template <typename T>
LOCKSTEP_INLINE_INTO_CLONE inline void AddSquaresOf(const T* p, size_t n, SquareLanes& lanes) {
  double acc[kSumOfSquaresLanes];
  for (size_t k = 0; k < kSumOfSquaresLanes; ++k) acc[k] = lanes.acc[k];
  size_t i = 0;
  for (; i + kSumOfSquaresLanes <= n; i += kSumOfSquaresLanes) {
    for (size_t k = 0; k < kSumOfSquaresLanes; ++k) {
      const double v = static_cast<double>(p[i + k]);
      acc[k] += v * v;
    }
  }
  for (; i < n; ++i) {
    const double v = static_cast<double>(p[i]);
    acc[i % kSumOfSquaresLanes] += v * v;
  }
  for (size_t k = 0; k < kSumOfSquaresLanes; ++k) lanes.acc[k] = acc[k];
}

}  // namespace

LOCKSTEP_SIMD_CLONES void AddSquares(const float* p, size_t n, SquareLanes& lanes) { AddSquaresOf(p, n, lanes); }
LOCKSTEP_SIMD_CLONES void AddSquares(const double* p, size_t n, SquareLanes& lanes) { AddSquaresOf(p, n, lanes); }

double Total(const SquareLanes& lanes) {
  // Pairwise: lanes (0,1), (2,3), ... then the pairs' sums pairwise, down to one. Each level in an
  // array of its own: summed in place, one array, GCC kept every level in memory and read each
  // sum back right after storing it (a capture calls this once per chunk, for tiny tensors a
  // tenth of the capture's time).
  static_assert(kSumOfSquaresLanes == 32, "the levels below are written for 32 partial sums");
  double l16[16], l8[8], l4[4];
  for (size_t k = 0; k < 16; ++k) l16[k] = lanes.acc[2 * k] + lanes.acc[2 * k + 1];
  for (size_t k = 0; k < 8; ++k) l8[k] = l16[2 * k] + l16[2 * k + 1];
  for (size_t k = 0; k < 4; ++k) l4[k] = l8[2 * k] + l8[2 * k + 1];
  return (l4[0] + l4[1]) + (l4[2] + l4[3]);
}

double SumOfSquares(const float* p, size_t n) {
  SquareLanes lanes;
  AddSquares(p, n, lanes);
  return Total(lanes);
}

double SumOfSquares(const double* p, size_t n) {
  SquareLanes lanes;
  AddSquares(p, n, lanes);
  return Total(lanes);
}

}  // namespace lockstep
