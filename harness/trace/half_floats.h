// The 16-bit floating-point values a capture reads where they lie (bfloat16, IEEE-754 binary16),
// as their bits: this layer has no LibTorch, and the CUDA norm (harness/capture/cuda/chunk_squares.cuh)
// reads the same values with the same functions. Every bfloat16 and every float16 value is a
// float32 value, so ToFloat is exact: the norm's sum of squares widens each value exactly, as it
// widens a float32 (sum_of_squares.h), and infinities and NaN stay what they are.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define LOCKSTEP_HALF_HD __host__ __device__ inline
#else
#define LOCKSTEP_HALF_HD inline
#endif

namespace lockstep {

// bfloat16: a float32's upper 16 bits (sign, 8 exponent bits, 7 mantissa bits).
struct BFloat16Bits {
  uint16_t bits;
};
// IEEE-754 binary16 (torch.float16): sign, 5 exponent bits (bias 15), 10 mantissa bits.
struct Float16Bits {
  uint16_t bits;
};
static_assert(sizeof(BFloat16Bits) == 2 && sizeof(Float16Bits) == 2, "read in place from a tensor's bytes");

LOCKSTEP_HALF_HD float FloatFromBits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

LOCKSTEP_HALF_HD float ToFloat(BFloat16Bits v) { return FloatFromBits(static_cast<uint32_t>(v.bits) << 16); }

LOCKSTEP_HALF_HD uint32_t BitsOfFloat(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
#endif
}

// Without a branch: the lanes of a CUDA warp converting neighbouring values do not diverge at a
// subnormal or an infinity.
LOCKSTEP_HALF_HD float ToFloat(Float16Bits v) {
  const uint32_t sign = static_cast<uint32_t>(v.bits & 0x8000u) << 16;
  const uint32_t magnitude = static_cast<uint32_t>(v.bits & 0x7fffu) << 13;  // exponent and mantissa
  const uint32_t exponent = magnitude & 0x0f800000u;
  const uint32_t normal = magnitude + ((127u - 15u) << 23);  // the exponent's bias moved
  const uint32_t special = normal + ((128u - 16u) << 23);     // infinity, NaN: all exponent bits set
  // Zero and subnormals: mantissa * 2^-24, made as (1 + mantissa/1024) * 2^-14 - 2^-14, which
  // float32 subtracts exactly (Sterbenz); 0 gives +0, the sign is set below.
  const uint32_t tiny = BitsOfFloat(FloatFromBits(normal + (1u << 23)) - FloatFromBits(113u << 23));
  const uint32_t bits = exponent == 0x0f800000u ? special : exponent == 0 ? tiny : normal;
  return FloatFromBits(bits | sign);
}

}  // namespace lockstep
