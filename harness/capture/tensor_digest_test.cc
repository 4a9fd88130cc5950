#include "harness/capture/tensor_digest.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "harness/capture/testing/tensor_record_oracle.h"
#include "harness/trace/digest.h"

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
