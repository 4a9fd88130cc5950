// Values for the tests of the norm's sum of squares (sum_of_squares_test, and the CUDA norm's
// logic and device tests): a norm is compared bit for bit, so the tests need data on which another
// order of the additions shows in the last bits, and the bits themselves.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "harness/trace/half_floats.h"

namespace lockstep::testing {

inline uint64_t Bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// n values m * 2^e, m uniform in [-1, 1), e uniform in [min_exponent, max_exponent]. A wide range
// lets a few values dominate a sum; a narrow one (a few binades) keeps every addition rounding.
template <typename T>
std::vector<T> ValuesOverExponents(size_t n, uint32_t seed, int min_exponent, int max_exponent) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(min_exponent, max_exponent);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(std::ldexp(mantissa(gen), exponent(gen)));
  return v;
}

// n float16 or bfloat16 values (half_floats.h): random sign and mantissa, the exponent field uniform
// in [min_field, max_field] (float16: 1-30 are the normal binades, 0 the subnormals; bfloat16:
// 1-254, 127 is 2^0).
template <typename T>
std::vector<T> SixteenBitValues(size_t n, uint32_t seed, unsigned min_field, unsigned max_field) {
  static_assert(std::is_same_v<T, Float16Bits> || std::is_same_v<T, BFloat16Bits>);
  constexpr unsigned kMantissaBits = std::is_same_v<T, Float16Bits> ? 10 : 7;
  std::mt19937 gen(seed);
  std::uniform_int_distribution<unsigned> field(min_field, max_field), mantissa(0, (1u << kMantissaBits) - 1),
      sign(0, 1);
  std::vector<T> v(n);
  for (T& x : v) x.bits = static_cast<uint16_t>(sign(gen) << 15 | field(gen) << kMantissaBits | mantissa(gen));
  return v;
}

}  // namespace lockstep::testing
