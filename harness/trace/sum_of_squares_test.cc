// SumOfSquares against its definition (sum_of_squares.h), written here lane by lane with no
// vector code in mind: whichever clone the machine picks (AVX-512, AVX2, baseline) must give the
// definition's bits, because recorded norms are compared across ranks and machines.
#include "harness/trace/sum_of_squares.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "harness/trace/testing/norm_test_values.h"

namespace lockstep {
namespace {

// Partial sum k adds values k, k + lanes, k + 2 lanes, ... in that order; then pairwise.
template <typename T>
double Definition(const std::vector<T>& v, size_t lanes) {
  std::vector<double> acc(lanes, 0.0);
  for (size_t k = 0; k < lanes; ++k) {
    for (size_t i = k; i < v.size(); i += lanes) acc[k] += static_cast<double>(v[i]) * static_cast<double>(v[i]);
  }
  while (acc.size() > 1) {
    std::vector<double> next(acc.size() / 2);
    for (size_t k = 0; k < next.size(); ++k) next[k] = acc[2 * k] + acc[2 * k + 1];
    acc.swap(next);
  }
  return acc[0];
}

using testing::Bits;

// Values over many orders of magnitude, so that the order of the additions shows in the last bits.
template <typename T>
std::vector<T> Values(size_t n, uint32_t seed) {
  return testing::ValuesOverExponents<T>(n, seed, -20, 20);
}

TEST(SumOfSquaresTest, EqualsTheDefinitionBitForBitAtEverySize) {
  for (size_t n : {0, 1, 7, 31, 32, 33, 63, 64, 65, 1000, 4096 + 17, 262144, 262144 + 5}) {
    const std::vector<float> f = Values<float>(n, static_cast<uint32_t>(n));
    EXPECT_EQ(Bits(SumOfSquares(f.data(), f.size())), Bits(Definition(f, kSumOfSquaresLanes))) << "float32, n=" << n;
    const std::vector<double> d = Values<double>(n, static_cast<uint32_t>(n) + 1);
    EXPECT_EQ(Bits(SumOfSquares(d.data(), d.size())), Bits(Definition(d, kSumOfSquaresLanes))) << "float64, n=" << n;
  }
}

// The test above can tell one order from another: on the same data, eight partial sums (the
// definition before 2026-11-27) give other bits.
TEST(SumOfSquaresTest, TheOrderShowsInTheBits) {
  const std::vector<float> f = Values<float>(100000, 7);
  EXPECT_NE(Bits(Definition(f, 8)), Bits(Definition(f, kSumOfSquaresLanes)));
  EXPECT_NE(Bits(SumOfSquares(f.data(), f.size())), Bits(Definition(f, 8)));
}

// Fed in pieces (each but the last a whole number of rounds of the partial sums), the same bits.
TEST(SumOfSquaresTest, InPiecesEqualsAtOnce) {
  const std::vector<float> f = Values<float>(100000 + 13, 9);
  const std::vector<double> d = Values<double>(100000 + 13, 10);
  for (size_t piece : {kSumOfSquaresLanes, 16 * kSumOfSquaresLanes, size_t{16384}}) {
    SquareLanes lf, ld;
    for (size_t at = 0; at < f.size(); at += piece) {
      AddSquares(f.data() + at, std::min(piece, f.size() - at), lf);
      AddSquares(d.data() + at, std::min(piece, d.size() - at), ld);
    }
    EXPECT_EQ(Bits(Total(lf)), Bits(SumOfSquares(f.data(), f.size()))) << "piece " << piece;
    EXPECT_EQ(Bits(Total(ld)), Bits(SumOfSquares(d.data(), d.size()))) << "piece " << piece;
  }
}

// The value a float16 or bfloat16 pattern stands for, decoded from its fields with ldexp: another
// road than half_floats.h's bit moves.
double Decoded(Float16Bits v) {
  const int exponent = (v.bits >> 10) & 0x1f;
  const int mantissa = v.bits & 0x3ff;
  const double sign = (v.bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1f) return mantissa == 0 ? sign * HUGE_VAL : std::nan("");
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}
double Decoded(BFloat16Bits v) {
  const int exponent = (v.bits >> 7) & 0xff;
  const int mantissa = v.bits & 0x7f;
  const double sign = (v.bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0xff) return mantissa == 0 ? sign * HUGE_VAL : std::nan("");
  if (exponent == 0) return sign * std::ldexp(mantissa, -133);
  return sign * std::ldexp(128 + mantissa, exponent - 134);
}

TEST(SumOfSquaresTest, EverySixteenBitPatternWidensToItsValue) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const Float16Bits h{static_cast<uint16_t>(bits)};
    const BFloat16Bits b{static_cast<uint16_t>(bits)};
    for (const auto& [ours, want] : {std::pair<double, double>{ToFloat(h), Decoded(h)}, {ToFloat(b), Decoded(b)}}) {
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(ours)) << "bits " << bits;
      } else {
        EXPECT_EQ(Bits(ours), Bits(want)) << "bits " << bits;
      }
    }
  }
}

// The summing loop widens a round of values at a time (vectorized, apart from ToFloat): every
// pattern, in every position of a round, gives its value's square (NaN stays NaN).
TEST(SumOfSquaresTest, EverySixteenBitPatternIsSquaredAsItsValueInTheLoop) {
  // One round and one value more: the round through the vector loop, the last value through ToFloat.
  const size_t n = kSumOfSquaresLanes + 1;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const Float16Bits h{static_cast<uint16_t>(bits)};
    const BFloat16Bits b{static_cast<uint16_t>(bits)};
    const double got_h = SumOfSquares(std::vector<Float16Bits>(n, h).data(), n);
    const double got_b = SumOfSquares(std::vector<BFloat16Bits>(n, b).data(), n);
    if (std::isnan(Decoded(h))) {
      EXPECT_TRUE(std::isnan(got_h)) << "float16 bits " << bits;
    } else {
      EXPECT_EQ(Bits(got_h), Bits(Definition(std::vector<double>(n, Decoded(h)), kSumOfSquaresLanes)))
          << "float16 bits " << bits;
    }
    if (std::isnan(Decoded(b))) {
      EXPECT_TRUE(std::isnan(got_b)) << "bfloat16 bits " << bits;
    } else {
      EXPECT_EQ(Bits(got_b), Bits(Definition(std::vector<double>(n, Decoded(b)), kSumOfSquaresLanes)))
          << "bfloat16 bits " << bits;
    }
  }
}

// float16 and bfloat16 values are summed by the same definition, each widened exactly: the sum of
// their float32 copies, bit for bit, at every size, and in pieces as at once.
template <typename T>
void ExpectSixteenBitSumsAsFloat32(unsigned min_field, unsigned max_field, uint32_t seed) {
  const std::vector<T> v = testing::SixteenBitValues<T>(100000 + 13, seed, min_field, max_field);
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = static_cast<float>(Decoded(v[i]));
  for (size_t n : {0, 1, 7, 31, 32, 33, 1000, 4096 + 17, 100000 + 13}) {
    EXPECT_EQ(Bits(SumOfSquares(v.data(), n)), Bits(SumOfSquares(f.data(), n))) << sizeof(T) << " n=" << n;
    EXPECT_EQ(Bits(SumOfSquaresOfBytes(std::is_same_v<T, Float16Bits> ? SquaredAs::kFloat16 : SquaredAs::kBFloat16,
                                       v.data(), n * sizeof(T))),
              Bits(SumOfSquares(f.data(), n)))
        << "by bytes, n=" << n;
  }
  SquareLanes lanes;
  for (size_t at = 0; at < v.size(); at += 4096) AddSquares(v.data() + at, std::min<size_t>(4096, v.size() - at), lanes);
  EXPECT_EQ(Bits(Total(lanes)), Bits(SumOfSquares(f.data(), f.size())));
}

TEST(SumOfSquaresTest, SixteenBitValuesSumAsTheirFloat32Values) {
  ExpectSixteenBitSumsAsFloat32<Float16Bits>(0, 30, 31);    // subnormals to 65504
  ExpectSixteenBitSumsAsFloat32<BFloat16Bits>(100, 154, 32);  // 2^-27 to 2^27
  // The comparison sees the order on such data: 8 partial sums give other bits.
  const std::vector<BFloat16Bits> v = testing::SixteenBitValues<BFloat16Bits>(100000, 33, 100, 154);
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = Decoded(v[i]);
  EXPECT_NE(Bits(SumOfSquares(v.data(), v.size())), Bits(Definition(d, 8)));
  EXPECT_EQ(Bits(SumOfSquares(v.data(), v.size())), Bits(Definition(d, kSumOfSquaresLanes)));
}

// Integers are converted to float64 as LibTorch's to(kDouble) converts them (exactly below 2^53,
// else to the nearest) and summed by the definition; a bool's byte counts 1 when it is not zero.
template <typename T>
void ExpectIntegersSumByTheDefinition(int64_t low, int64_t high, uint32_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> value(low, high);
  std::vector<T> v(100000 + 13);
  for (T& x : v) x = static_cast<T>(value(gen));
  for (size_t n : {0, 1, 31, 33, 4096 + 17, 100000 + 13}) {
    const std::vector<T> head(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(Bits(SumOfSquares(v.data(), n)), Bits(Definition(head, kSumOfSquaresLanes))) << sizeof(T) << " n=" << n;
  }
}

TEST(SumOfSquaresTest, IntegersSumAsTheirFloat64Values) {
  ExpectIntegersSumByTheDefinition<int64_t>(-(int64_t{1} << 62), int64_t{1} << 62, 41);  // rounded above 2^53
  ExpectIntegersSumByTheDefinition<int64_t>(-1000, 1000, 42);
  ExpectIntegersSumByTheDefinition<int32_t>(INT32_MIN, INT32_MAX, 43);
  ExpectIntegersSumByTheDefinition<int16_t>(INT16_MIN, INT16_MAX, 44);
  ExpectIntegersSumByTheDefinition<int8_t>(INT8_MIN, INT8_MAX, 45);
  ExpectIntegersSumByTheDefinition<uint8_t>(0, UINT8_MAX, 46);
}

TEST(SumOfSquaresTest, ABoolCountsOneWhereItsByteIsNotZero) {
  const std::vector<BoolByte> b = {{0}, {1}, {2}, {255}, {0}, {1}};
  EXPECT_EQ(SumOfSquares(b.data(), b.size()), 4.0);
  EXPECT_EQ(SumOfSquaresOfBytes(SquaredAs::kBool, b.data(), b.size()), 4.0);
  std::vector<BoolByte> many(1000, BoolByte{7});
  EXPECT_EQ(SumOfSquares(many.data(), many.size()), 1000.0);
}

TEST(SumOfSquaresTest, BytesOfNoKindSumToZero) {
  const std::vector<float> f(10, 2.0f);
  EXPECT_EQ(SumOfSquaresOfBytes(SquaredAs::kNone, f.data(), sizeof(float) * f.size()), 0.0);
  EXPECT_EQ(SumOfSquaresOfBytes(SquaredAs::kFloat32, f.data(), sizeof(float) * f.size()), 40.0);
  EXPECT_EQ(SquaredValueBytes(SquaredAs::kFloat16), 2u);
  EXPECT_EQ(SquaredValueBytes(SquaredAs::kFloat64), 8u);
  EXPECT_EQ(SquaredValueBytes(SquaredAs::kInt64), 8u);
  EXPECT_EQ(SquaredValueBytes(SquaredAs::kInt32), 4u);
  EXPECT_EQ(SquaredValueBytes(SquaredAs::kInt16), 2u);
  EXPECT_EQ(SquaredValueBytes(SquaredAs::kBool), 1u);
  const std::vector<int32_t> i = {3, -4};
  EXPECT_EQ(SumOfSquaresOfBytes(SquaredAs::kInt32, i.data(), sizeof(int32_t) * i.size()), 25.0);
}

TEST(SumOfSquaresTest, NanAndInfinityPropagate) {
  std::vector<float> f(100, 1.0f);
  EXPECT_EQ(SumOfSquares(f.data(), f.size()), 100.0);
  f[77] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isinf(SumOfSquares(f.data(), f.size())));
  f[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(SumOfSquares(f.data(), f.size())));
}

}  // namespace
}  // namespace lockstep
