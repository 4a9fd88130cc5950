// The sum of squares behind a tensor's L2 norm (TensorL2Norm, MakeTensorRecord, MultiTensorDigest):
// one definition, so every path that norms float32/float64 bytes adds in the same order and gives
// the same bits.
#pragma once

#include <cstddef>

namespace lockstep {

// Sum of squares of n values in float64, with eight independent partial sums combined pairwise at
// the end (the additions pipeline and vectorize); NaN and infinity propagate as in a plain sum.
double SumOfSquares(const float* p, size_t n);
double SumOfSquares(const double* p, size_t n);

}  // namespace lockstep
