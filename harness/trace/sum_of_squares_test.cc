// SumOfSquares against its definition (sum_of_squares.h), written here lane by lane with no
// vector code in mind: whichever clone the machine picks (AVX-512, AVX2, baseline) must give the
// definition's bits, because recorded norms are compared across ranks and machines.
#include "harness/trace/sum_of_squares.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
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
