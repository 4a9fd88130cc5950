#include "harness/capture/tensor_digest.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "harness/capture/testing/tensor_record_oracle.h"
#include "harness/trace/digest.h"
#include "harness/trace/half_floats.h"
#include "harness/trace/sum_of_squares.h"
#include "harness/trace/testing/norm_test_values.h"

namespace lockstep {
namespace {

TEST(TensorDigestTest, DtypeNames) {
  EXPECT_EQ(DtypeName(torch::kFloat32), "float32");
  EXPECT_EQ(DtypeName(torch::kFloat64), "float64");
  EXPECT_EQ(DtypeName(torch::kFloat16), "float16");
  EXPECT_EQ(DtypeName(torch::kBFloat16), "bfloat16");
  EXPECT_EQ(DtypeName(torch::kInt64), "int64");
  EXPECT_EQ(DtypeName(torch::kInt32), "int32");
  EXPECT_EQ(DtypeName(torch::kUInt8), "uint8");
  EXPECT_EQ(DtypeName(torch::kBool), "bool");
  EXPECT_EQ(DtypeName(torch::kComplexFloat), "complex64");
}

TEST(TensorDigestTest, IsTheByteDigestWithDtypeAndShape) {
  torch::manual_seed(0);
  torch::Tensor t = torch::randn({3, 5});
  const std::vector<int64_t> shape = {3, 5};
  EXPECT_EQ(DigestTensor(t), DigestBytes(t.data_ptr(), 15 * sizeof(float), "float32", shape));
}

TEST(TensorDigestTest, ViewsDigestLikeTheirContiguousEqual) {
  torch::manual_seed(1);
  torch::Tensor t = torch::randn({8, 6});
  torch::Tensor transposed = t.t();
  ASSERT_FALSE(transposed.is_contiguous());
  EXPECT_EQ(DigestTensor(transposed), DigestTensor(transposed.contiguous()));
  torch::Tensor sliced = t.index({torch::indexing::Slice(), torch::indexing::Slice(1, 4)});
  EXPECT_EQ(DigestTensor(sliced), DigestTensor(sliced.clone()));
  EXPECT_NE(DigestTensor(transposed), DigestTensor(t));
}

TEST(TensorDigestTest, ShapeAndDtypeMatter) {
  torch::Tensor t = torch::arange(16, torch::kFloat32);
  EXPECT_NE(DigestTensor(t), DigestTensor(t.view({4, 4})));
  EXPECT_NE(DigestTensor(t), DigestTensor(t.view(torch::kInt32)));
  EXPECT_NE(DigestTensor(t), DigestTensor(t.to(torch::kFloat64)));
  EXPECT_EQ(DigestTensor(t), DigestTensor(torch::arange(16, torch::kFloat32)));
}

TEST(TensorDigestTest, OneUlpChangesTheDigest) {
  torch::Tensor t = torch::ones({1000});
  torch::Tensor u = t.clone();
  u[500] = std::nextafter(1.0f, 2.0f);
  EXPECT_NE(DigestTensor(t), DigestTensor(u));
}

TEST(TensorDigestTest, SameForEveryThreadCountOnLargeTensors) {
  torch::manual_seed(2);
  torch::Tensor t = torch::randn({3 * 262144 + 77});  // a little over 3 MiB of float32
  const Digest128 one = DigestTensor(t, 1);
  EXPECT_EQ(DigestTensor(t, 2), one);
  EXPECT_EQ(DigestTensor(t, 4), one);
}

TEST(TensorDigestTest, UndefinedAndEmptyTensorsHaveDigests) {
  EXPECT_EQ(DigestTensor(torch::Tensor()), DigestBytes(nullptr, 0, "undefined", std::vector<int64_t>{}));
  EXPECT_NE(DigestTensor(torch::empty({0})), DigestTensor(torch::empty({0, 3})));
}

uint32_t FloatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The norm reads float16 and bfloat16 values where they lie (harness/trace/half_floats.h): each of
// the 65536 bit patterns of each type widens to the float32 LibTorch's own conversion gives
// (c10::Half, c10::BFloat16), subnormals, signed zeros and infinities included; NaN stays NaN.
TEST(TensorDigestTest, EverySixteenBitValueWidensAsLibTorchWidensIt) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const c10::Half h(static_cast<uint16_t>(bits), c10::Half::from_bits());
    const c10::BFloat16 b(static_cast<uint16_t>(bits), c10::BFloat16::from_bits());
    const float ours_h = ToFloat(Float16Bits{static_cast<uint16_t>(bits)});
    const float ours_b = ToFloat(BFloat16Bits{static_cast<uint16_t>(bits)});
    if (std::isnan(static_cast<float>(h))) {
      EXPECT_TRUE(std::isnan(ours_h)) << "float16 bits " << bits;
    } else {
      EXPECT_EQ(FloatBits(ours_h), FloatBits(static_cast<float>(h))) << "float16 bits " << bits;
    }
    if (std::isnan(static_cast<float>(b))) {
      EXPECT_TRUE(std::isnan(ours_b)) << "bfloat16 bits " << bits;
    } else {
      EXPECT_EQ(FloatBits(ours_b), FloatBits(static_cast<float>(b))) << "bfloat16 bits " << bits;
    }
  }
}

using testing::Bits;  // a norm's bits

// A float16 or bfloat16 tensor's norm is the definition's sum over its values widened exactly
// (since 2026-11-29; LibTorch's reduction before): within one chunk (at most 2^18 values, where
// the float32 copy's chunks are the same values) the float32 copy's norm, bit for bit; over
// several chunks, the chunks' sums in order, each the float32 copy's sum of the same values.
TEST(TensorDigestTest, SixteenBitNormsSumTheirValuesAsFloat32Does) {
  torch::manual_seed(3);
  for (const auto dtype : {torch::kFloat16, torch::kBFloat16}) {
    for (const int64_t n : {1, 31, 33, 1000, 262144}) {
      const torch::Tensor t = (torch::randn({n}) * 40).to(dtype);
      EXPECT_EQ(Bits(TensorL2Norm(t)), Bits(TensorL2Norm(t.to(torch::kFloat32))))
          << c10::toString(dtype) << " n=" << n;
    }
    const int64_t per_chunk = 524288;  // 1 MiB of 2-byte values
    const torch::Tensor big = torch::randn({2 * per_chunk + 9}).to(dtype);
    double sum = 0.0;
    for (int64_t at = 0; at < big.numel(); at += per_chunk) {
      const torch::Tensor chunk = big.narrow(0, at, std::min(per_chunk, big.numel() - at)).to(torch::kFloat32);
      sum += SumOfSquares(chunk.const_data_ptr<float>(), static_cast<size_t>(chunk.numel()));
    }
    EXPECT_EQ(Bits(TensorL2Norm(big)), Bits(std::sqrt(sum))) << c10::toString(dtype);
    // LibTorch's reduction, the definition before, adds in another order: the same norm to a few
    // ulps, not the same bits on every tensor.
    EXPECT_NEAR(TensorL2Norm(big), L2NormTensor(big).item<double>(), 1e-9 * TensorL2Norm(big));
  }
}

// Integer and bool tensors (since 2026-11-29; LibTorch's reduction of their float64 copy before):
// the definition's sum of their values converted to float64, so within one chunk (at most 2^17
// values) their float64 copy's norm, bit for bit; a bool counts 1 per true value.
TEST(TensorDigestTest, IntegerNormsSumTheirValuesAsFloat64Does) {
  torch::manual_seed(4);
  for (const auto dtype : {torch::kInt64, torch::kInt32, torch::kInt16, torch::kInt8, torch::kUInt8}) {
    for (const int64_t n : {1, 33, 1000, 131072}) {
      const torch::Tensor t = torch::randint(dtype == torch::kUInt8 ? 0 : -100, 100, {n}, dtype);
      EXPECT_EQ(Bits(TensorL2Norm(t)), Bits(TensorL2Norm(t.to(torch::kFloat64)))) << c10::toString(dtype) << " n=" << n;
    }
  }
  const torch::Tensor mask = torch::rand({5000}) > 0.3;
  EXPECT_EQ(TensorL2Norm(mask), std::sqrt(mask.sum().item<double>()));
  EXPECT_EQ(TensorL2Norm(torch::full({}, 12, torch::kInt64)), 12.0);  // BatchNorm's num_batches_tracked
}

TEST(TensorDigestTest, L2NormInDouble) {
  EXPECT_DOUBLE_EQ(TensorL2Norm(torch::tensor({3.0f, 4.0f})), 5.0);
  EXPECT_DOUBLE_EQ(TensorL2Norm(torch::tensor({3, 4}, torch::kInt64)), 5.0);
  EXPECT_DOUBLE_EQ(TensorL2Norm(torch::tensor({3.0f, 4.0f}).to(torch::kBFloat16)), 5.0);
  EXPECT_EQ(TensorL2Norm(torch::Tensor()), 0.0);
  EXPECT_EQ(TensorL2Norm(torch::empty({0})), 0.0);
  EXPECT_TRUE(std::isnan(TensorL2Norm(torch::tensor({1.0f, NAN}))));
  EXPECT_TRUE(std::isinf(TensorL2Norm(torch::tensor({1.0f, INFINITY}))));
  // float32 accumulation would round this sum; double keeps it.
  torch::Tensor big = torch::full({1 << 20}, 1.0f + 1.0f / 1024);
  EXPECT_NEAR(TensorL2Norm(big), std::sqrt(double(1 << 20)) * (1.0 + 1.0 / 1024), 1e-9);
}

TEST(TensorDigestTest, MakeTensorRecordFillsEveryField) {
  torch::Tensor t = torch::tensor({{1.0, 2.0}, {2.0, 4.0}}, torch::kFloat64);
  auto r = MakeTensorRecord("fc.weight#exp_avg", TensorKind::kOptimizerState, t, /*replicated=*/false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->name, "fc.weight#exp_avg");
  EXPECT_EQ(r->kind, TensorKind::kOptimizerState);
  EXPECT_EQ(r->digest, DigestTensor(t));
  EXPECT_EQ(r->numel, 4);
  EXPECT_EQ(r->dtype, "float64");
  EXPECT_DOUBLE_EQ(r->norm, 5.0);
  EXPECT_FALSE(r->replicated);
}

// Contiguous CPU float tensors take a path without LibTorch ops (hand-written norm, bytes read in
// place); it must agree with LibTorch's float64 norm and with the digest of a fresh copy.
TEST(TensorDigestTest, InPlacePathAgreesWithLibTorch) {
  torch::manual_seed(11);
  for (int64_t n : {1, 7, 8, 9, 1000, 4097}) {
    for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
      SCOPED_TRACE("numel " + std::to_string(n));
      torch::Tensor t = torch::randn({n}, dtype) * 3;
      const double want = torch::linalg_vector_norm(t.to(torch::kFloat64), 2).item<double>();
      EXPECT_NEAR(TensorL2Norm(t), want, 1e-13 * want);
    }
  }
  // A contiguous view with a storage offset is read in place, from the right bytes.
  torch::Tensor base = torch::randn({10, 16});
  torch::Tensor rows = base.narrow(0, 3, 4);
  ASSERT_TRUE(rows.is_contiguous());
  EXPECT_EQ(DigestTensor(rows), DigestTensor(rows.clone()));
  EXPECT_DOUBLE_EQ(TensorL2Norm(rows), TensorL2Norm(rows.clone()));
  // MakeTensorRecord hashes and sums in one pass; same digest and the very same norm, also over
  // several chunks and for an empty tensor.
  for (torch::Tensor x : {torch::randn({300 * 1024 + 5}), torch::randn({7, 9}, torch::kFloat64), torch::empty({0, 3})}) {
    Result<TensorRecord> r = MakeTensorRecord("x", TensorKind::kParam, x);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->digest, DigestTensor(x));
    EXPECT_EQ(r->norm, TensorL2Norm(x));
  }
  // Lazy negative and conjugate views still digest the values they show.
  torch::Tensor c = torch::randn({5}, torch::kComplexFloat);
  EXPECT_EQ(DigestTensor(c.conj()), DigestTensor(c.conj().resolve_conj()));
}

}  // namespace
}  // namespace lockstep
