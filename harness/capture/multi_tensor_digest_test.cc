#include "harness/capture/multi_tensor_digest.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "harness/capture/tensor_digest.h"
#include "harness/trace/digest.h"
#include "harness/trace/testing/norm_test_values.h"

namespace lockstep {
namespace {

using ::lockstep::testing::Bits;  // harness/trace/testing/norm_test_values.h

// Digests `tensors` as one list with `m` and checks each against the per-tensor path, bit for bit
// (norms too: NaN payloads and the sign of zero included), and the records Run filled with them.
void ExpectSameAsPerTensor(MultiTensorDigest& m, const std::vector<torch::Tensor>& tensors) {
  m.Clear();
  for (const auto& t : tensors) m.Add(t);
  std::vector<TensorRecord> records(tensors.size());
  for (TensorRecord& r : records) r.norm = -1.0;  // not a norm: each must be written
  ASSERT_TRUE(m.Run(records.data()).ok());
  ASSERT_EQ(m.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(records[i].digest, m.digest(i)) << "record " << i;
    EXPECT_EQ(Bits(records[i].norm), Bits(m.norm(i))) << "record " << i;
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string what = "tensor " + std::to_string(i) + " " +
                             (tensors[i].defined() ? std::string(c10::toString(tensors[i].scalar_type())) + " " +
                                                         c10::str(tensors[i].sizes())
                                                   : std::string("undefined"));
    EXPECT_EQ(m.digest(i), DigestTensor(tensors[i])) << what;
    EXPECT_EQ(Bits(m.norm(i)), Bits(TensorL2Norm(tensors[i]))) << what << ": " << m.norm(i);
  }
}

// Sizes around the 8-wide sum and the 1 MiB chunk: 262144 float32 elements are one chunk.
TEST(MultiTensorDigestTest, OddSizesAroundLanesAndChunks) {
  torch::manual_seed(3);
  std::vector<torch::Tensor> list;
  for (int64_t n : {1, 2, 7, 8, 9, 15, 17, 1000, 262143, 262144, 262145, 3 * 262144 + 77}) {
    list.push_back(torch::randn({n}));
  }
  for (int64_t n : {1, 7, 131071, 131072, 131073, 2 * 131072 + 5}) list.push_back(torch::randn({n}, torch::kFloat64));
  MultiTensorDigest m;
  ExpectSameAsPerTensor(m, list);
}

// Every dtype: those the definition sums (SquaredAsOf) in the pass, the others normed as TensorL2Norm
// does.
TEST(MultiTensorDigestTest, EveryDtype) {
  torch::manual_seed(4);
  const torch::Tensor base = torch::randn({5, 7}) * 10;
  std::vector<torch::Tensor> list = {
      base,
      base.to(torch::kFloat64),
      base.to(torch::kFloat16),
      base.to(torch::kBFloat16),
      base.to(torch::kInt64),
      base.to(torch::kInt32),
      base.to(torch::kInt16),
      base.to(torch::kInt8),
      base.abs().to(torch::kUInt8),
      base.gt(0),
      torch::complex(base, base.flip(0)),
      torch::complex(base.to(torch::kFloat64), base.to(torch::kFloat64)),
      torch::full({}, 12, torch::kInt64),  // 0-d: BatchNorm's num_batches_tracked
      torch::full({}, 1.5f),               // 0-d float
  };
  MultiTensorDigest m;
  ExpectSameAsPerTensor(m, list);
}

TEST(MultiTensorDigestTest, ViewsAndLazyBitsDigestLikeTheirValues) {
  torch::manual_seed(5);
  const torch::Tensor t = torch::randn({64, 48});
  const torch::Tensor c = torch::complex(torch::randn({6, 5}), torch::randn({6, 5}));
  std::vector<torch::Tensor> list = {
      t.t(),                                       // transposed
      t.index({torch::indexing::Slice(), torch::indexing::Slice(3, 20)}),  // strided columns
      t.narrow(0, 5, 10),                          // contiguous with a storage offset
      t[7],                                        // a row, offset again
      t.index({torch::indexing::Slice(torch::indexing::None, torch::indexing::None, 3)}),  // every third row
      torch::randn({1, 9}).expand({4, 9}),          // stride 0
      c.conj(),                                    // lazy conjugate bit
      torch::_neg_view(t.to(torch::kFloat64)),     // lazy negative bit
      t.to(torch::kFloat64).t(),
      t.to(torch::kInt64).t(),
  };
  ASSERT_FALSE(list[0].is_contiguous());
  ASSERT_TRUE(list[6].is_conj());
  ASSERT_TRUE(list[7].is_neg());
  MultiTensorDigest m;
  ExpectSameAsPerTensor(m, list);
}

TEST(MultiTensorDigestTest, EmptyAndUndefinedTensors) {
  std::vector<torch::Tensor> list = {
      torch::empty({0}), torch::empty({0, 3}), torch::empty({3, 0}, torch::kFloat64), torch::empty({0}, torch::kInt64),
      torch::Tensor(), torch::randn({4})};
  MultiTensorDigest m;
  ExpectSameAsPerTensor(m, list);
  EXPECT_NE(m.digest(0), m.digest(1));  // the shape is in the digest even with no bytes
  EXPECT_EQ(m.norm(0), 0.0);
}

TEST(MultiTensorDigestTest, NonFiniteValuesPropagateAsInTheNorm) {
  std::vector<torch::Tensor> list = {torch::tensor({1.0f, NAN, 2.0f}), torch::tensor({1.0, static_cast<double>(INFINITY)}),
                                     torch::tensor({-INFINITY, 3.0f}), torch::tensor({-0.0f})};
  MultiTensorDigest m;
  ExpectSameAsPerTensor(m, list);
  EXPECT_TRUE(std::isnan(m.norm(0)));
  EXPECT_TRUE(std::isinf(m.norm(1)));
}

// The documented vectors (docs/TRACE.md, DigestTest.PinnedValues) through the list.
TEST(MultiTensorDigestTest, TheDocumentedTestVectors) {
  torch::Tensor bytes = torch::empty({1048676}, torch::kUInt8);
  auto* b = bytes.data_ptr<uint8_t>();
  for (int64_t i = 0; i < bytes.numel(); ++i) b[i] = static_cast<uint8_t>((7 * i + 1) % 256);
  MultiTensorDigest m;
  m.Add(torch::empty({0}));
  m.Add(bytes);
  ASSERT_TRUE(m.Run().ok());
  EXPECT_EQ(m.digest(0).ToHex(), "63095afe36edab0e18deacd0db1b476b");
  EXPECT_EQ(m.digest(1).ToHex(), "99bac8fa349468865cc65ae0908b55c8");
}

// The descriptor seed is kept per position across lists: a position whose shape or dtype changes
// must not keep the old one (same bytes, other shape or dtype: other digest).
TEST(MultiTensorDigestTest, APositionThatChangesShapeOrDtypeIsDigestedAnew) {
  const torch::Tensor flat = torch::arange(16, torch::kFloat32);
  MultiTensorDigest m;
  ExpectSameAsPerTensor(m, {flat, flat.view(torch::kInt32)});
  const Digest128 first = m.digest(0);
  ExpectSameAsPerTensor(m, {flat.view({4, 4}), flat});
  EXPECT_NE(m.digest(0), first);
  ExpectSameAsPerTensor(m, {flat.view(torch::kInt32), flat.view({4, 4}), flat.view({2, 8})});
  ExpectSameAsPerTensor(m, {flat});  // a shorter list after a longer one
  EXPECT_EQ(m.digest(0), first);
}

// The same positions step after step, values changing in place (the trainer's case).
TEST(MultiTensorDigestTest, ValuesUpdatedInPlaceBetweenRuns) {
  torch::manual_seed(6);
  std::vector<torch::Tensor> list = {torch::randn({33, 5}), torch::randn({300000}), torch::randn({1})};
  MultiTensorDigest m;
  for (int step = 0; step < 3; ++step) {
    ExpectSameAsPerTensor(m, list);
    for (auto& t : list) t.mul_(1.5).add_(0.25);
  }
}

}  // namespace
}  // namespace lockstep
