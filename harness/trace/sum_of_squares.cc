#include "harness/trace/sum_of_squares.h"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

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
// A value as float64: a plain conversion, and a bool's byte as 0 or 1.
template <typename T>
LOCKSTEP_INLINE_INTO_CLONE inline double AsDouble(T v) {
  return static_cast<double>(v);
}
LOCKSTEP_INLINE_INTO_CLONE inline double AsDouble(BoolByte v) { return v.byte != 0 ? 1.0 : 0.0; }

template <typename T>
LOCKSTEP_INLINE_INTO_CLONE inline void AddSquaresOf(const T* p, size_t n, SquareLanes& lanes) {
  double acc[kSumOfSquaresLanes];
  for (size_t k = 0; k < kSumOfSquaresLanes; ++k) acc[k] = lanes.acc[k];
  size_t i = 0;
  for (; i + kSumOfSquaresLanes <= n; i += kSumOfSquaresLanes) {
    for (size_t k = 0; k < kSumOfSquaresLanes; ++k) {
      const double v = AsDouble(p[i + k]);
      acc[k] += v * v;
    }
  }
  for (; i < n; ++i) {
    const double v = AsDouble(p[i]);
    acc[i % kSumOfSquaresLanes] += v * v;
  }
  for (size_t k = 0; k < kSumOfSquaresLanes; ++k) lanes.acc[k] = acc[k];
}

// AddSquaresOf for 16-bit values, value by value through ToFloat (half_floats.h): the portable
// path, and the tail of the vector one.
template <typename T>
inline void AddSquaresOfSixteenBit(const T* p, size_t n, size_t first, SquareLanes& lanes) {
  for (size_t i = first; i < n; ++i) {
    const double v = static_cast<double>(ToFloat(p[i]));
    lanes.acc[i % kSumOfSquaresLanes] += v * v;
  }
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define LOCKSTEP_SIXTEEN_BIT_AVX2 1
// Eight 16-bit values as eight float32 values, exactly: bfloat16 moved into a float32's upper
// half; float16 by F16C's conversion (exact for every value, subnormals included: every float16
// is a float32).
__attribute__((target("avx2,f16c"))) inline __m256 EightFloats(const BFloat16Bits* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
__attribute__((target("avx2,f16c"))) inline __m256 EightFloats(const Float16Bits* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// The 32 partial sums in eight registers of four: value i + 8m + q of a round (q < 8) goes to
// partial sum 8m + q, as the definition has it; squared and added as two instructions, unfused.
template <typename T>
__attribute__((target("avx2,f16c"))) void AddSquaresOfSixteenBitAvx2(const T* p, size_t n, SquareLanes& lanes) {
  static_assert(kSumOfSquaresLanes == 32, "eight registers of four partial sums");
  __m256d acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_loadu_pd(lanes.acc + 4 * j);
  size_t i = 0;
  for (; i + kSumOfSquaresLanes <= n; i += kSumOfSquaresLanes) {
    for (int m = 0; m < 4; ++m) {
      const __m256 f = EightFloats(p + i + 8 * m);
      const __m256d low = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
      const __m256d high = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
      acc[2 * m] = _mm256_add_pd(acc[2 * m], _mm256_mul_pd(low, low));
      acc[2 * m + 1] = _mm256_add_pd(acc[2 * m + 1], _mm256_mul_pd(high, high));
    }
  }
  for (int j = 0; j < 8; ++j) _mm256_storeu_pd(lanes.acc + 4 * j, acc[j]);
  AddSquaresOfSixteenBit(p, n, i, lanes);
}

// F16C from CPUID itself: Clang's __builtin_cpu_supports does not know "f16c" (GCC's does).
bool HasAvx2AndF16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  }();
  return has;
}
#endif

template <typename T>
void AddSquaresOfSixteenBit(const T* p, size_t n, SquareLanes& lanes) {
#if LOCKSTEP_SIXTEEN_BIT_AVX2
  if (HasAvx2AndF16c()) return AddSquaresOfSixteenBitAvx2(p, n, lanes);
#endif
  AddSquaresOfSixteenBit(p, n, 0, lanes);
}

}  // namespace

LOCKSTEP_SIMD_CLONES void AddSquares(const float* p, size_t n, SquareLanes& lanes) { AddSquaresOf(p, n, lanes); }
LOCKSTEP_SIMD_CLONES void AddSquares(const double* p, size_t n, SquareLanes& lanes) { AddSquaresOf(p, n, lanes); }
void AddSquares(const Float16Bits* p, size_t n, SquareLanes& lanes) { AddSquaresOfSixteenBit(p, n, lanes); }
void AddSquares(const BFloat16Bits* p, size_t n, SquareLanes& lanes) { AddSquaresOfSixteenBit(p, n, lanes); }
LOCKSTEP_SIMD_CLONES void AddSquares(const int64_t* p, size_t n, SquareLanes& lanes) { AddSquaresOf(p, n, lanes); }
LOCKSTEP_SIMD_CLONES void AddSquares(const int32_t* p, size_t n, SquareLanes& lanes) { AddSquaresOf(p, n, lanes); }
LOCKSTEP_SIMD_CLONES void AddSquares(const int16_t* p, size_t n, SquareLanes& lanes) { AddSquaresOf(p, n, lanes); }
LOCKSTEP_SIMD_CLONES void AddSquares(const int8_t* p, size_t n, SquareLanes& lanes) { AddSquaresOf(p, n, lanes); }
LOCKSTEP_SIMD_CLONES void AddSquares(const uint8_t* p, size_t n, SquareLanes& lanes) { AddSquaresOf(p, n, lanes); }
LOCKSTEP_SIMD_CLONES void AddSquares(const BoolByte* p, size_t n, SquareLanes& lanes) { AddSquaresOf(p, n, lanes); }

void AddSquaresOfBytes(SquaredAs as, const void* p, size_t nbytes, SquareLanes& lanes) {
  if (as == SquaredAs::kNone) return;
  const size_t n = nbytes / SquaredValueBytes(as);
  switch (as) {
    case SquaredAs::kNone: return;
    case SquaredAs::kFloat32: return AddSquares(static_cast<const float*>(p), n, lanes);
    case SquaredAs::kFloat64: return AddSquares(static_cast<const double*>(p), n, lanes);
    case SquaredAs::kFloat16: return AddSquares(static_cast<const Float16Bits*>(p), n, lanes);
    case SquaredAs::kBFloat16: return AddSquares(static_cast<const BFloat16Bits*>(p), n, lanes);
    case SquaredAs::kInt64: return AddSquares(static_cast<const int64_t*>(p), n, lanes);
    case SquaredAs::kInt32: return AddSquares(static_cast<const int32_t*>(p), n, lanes);
    case SquaredAs::kInt16: return AddSquares(static_cast<const int16_t*>(p), n, lanes);
    case SquaredAs::kInt8: return AddSquares(static_cast<const int8_t*>(p), n, lanes);
    case SquaredAs::kUInt8: return AddSquares(static_cast<const uint8_t*>(p), n, lanes);
    case SquaredAs::kBool: return AddSquares(static_cast<const BoolByte*>(p), n, lanes);
  }
}

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

namespace {

template <typename T>
double SumOfSquaresOf(const T* p, size_t n) {
  SquareLanes lanes;
  AddSquares(p, n, lanes);
  return Total(lanes);
}

}  // namespace

double SumOfSquares(const float* p, size_t n) { return SumOfSquaresOf(p, n); }
double SumOfSquares(const double* p, size_t n) { return SumOfSquaresOf(p, n); }
double SumOfSquares(const Float16Bits* p, size_t n) { return SumOfSquaresOf(p, n); }
double SumOfSquares(const BFloat16Bits* p, size_t n) { return SumOfSquaresOf(p, n); }
double SumOfSquares(const int64_t* p, size_t n) { return SumOfSquaresOf(p, n); }
double SumOfSquares(const int32_t* p, size_t n) { return SumOfSquaresOf(p, n); }
double SumOfSquares(const int16_t* p, size_t n) { return SumOfSquaresOf(p, n); }
double SumOfSquares(const int8_t* p, size_t n) { return SumOfSquaresOf(p, n); }
double SumOfSquares(const uint8_t* p, size_t n) { return SumOfSquaresOf(p, n); }
double SumOfSquares(const BoolByte* p, size_t n) { return SumOfSquaresOf(p, n); }

double SumOfSquaresOfBytes(SquaredAs as, const void* p, size_t nbytes) {
  if (as == SquaredAs::kNone) return 0.0;
  SquareLanes lanes;
  AddSquaresOfBytes(as, p, nbytes, lanes);
  return Total(lanes);
}

}  // namespace lockstep
