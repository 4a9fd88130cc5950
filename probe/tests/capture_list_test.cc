#include "probe/capture_list.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness/capture/testing/tensor_record_oracle.h"
#include "harness/trace/testing/norm_test_values.h"

namespace lockstep::probe {
namespace {

using ::lockstep::testing::Bits;  // harness/trace/testing/norm_test_values.h

// What MakeTensorRecord, the per-tensor definition, says of `t` under `name`.
TensorRecord Want(const std::string& name, TensorKind kind, const torch::Tensor& t, bool shared) {
  Result<TensorRecord> want = MakeTensorRecord(name, kind, t, shared);
  EXPECT_TRUE(want.ok()) << want.status().ToString();
  return want.ok() ? *want : TensorRecord{};
}

void ExpectRecord(const TensorRecord& got, const TensorRecord& want) {
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.kind, want.kind);
  EXPECT_EQ(got.digest, want.digest) << got.name;
  EXPECT_EQ(Bits(got.norm), Bits(want.norm)) << got.name;
  EXPECT_EQ(got.numel, want.numel) << got.name;
  EXPECT_EQ(got.dtype, want.dtype) << got.name;
  EXPECT_EQ(got.replicated, want.replicated) << got.name;
}

std::vector<ListedTensor> Entries(const std::vector<std::string>& names) {
  std::vector<ListedTensor> out;
  for (const std::string& n : names) out.push_back(ListedTensor{n, true, nullptr});
  return out;
}

// Every capture of a list, the first and the later ones that reuse its digest seeds, gives the
// per-tensor definition's records of the tensors as they are at that capture; names, sharing and
// groups are the list's.
TEST(CaptureListTest, EveryCaptureGivesTheDefinitionsRecordsOfTheTensorsAsTheyAreThen) {
  torch::manual_seed(3);
  const auto group = std::make_shared<const ReplicaGroup>(ReplicaGroup{{0, 2}, "mesh dim dp"});
  std::vector<ListedTensor> entries = Entries({"w", "w.t", "b", "step", "alone"});
  entries[2].group = group;
  entries[4].shared = false;
  CaptureList list(TensorKind::kParam, entries);
  torch::Tensor w = torch::randn({8, 4});
  std::vector<torch::Tensor> tensors = {w, w.t(), torch::randn({4}, torch::kFloat64), torch::tensor(3.0f),
                                        torch::arange(6, torch::kInt64)};
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("capture " + std::to_string(round));
    Result<Captured> got = list.Capture(tensors);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->records.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      ExpectRecord(got->records[i], Want(entries[i].name, TensorKind::kParam, tensors[i], entries[i].shared));
      EXPECT_EQ(got->records[i].group, entries[i].group);
    }
    // The next step: new values in place, a new storage, another shape at one position.
    w.add_(0.5);
    tensors[2] = torch::randn({4}, torch::kFloat64);
    tensors[3] = round == 0 ? torch::tensor({1.0f, 2.0f}) : torch::tensor(4.0f);
  }
}

// A sparse tensor (nn.Embedding(sparse=True)'s gradient) is digested as its dense values.
TEST(CaptureListTest, ASparseTensorIsDigestedAsItsDenseValues) {
  const torch::Tensor indices = torch::tensor({{0, 2, 2}}, torch::kInt64);
  const torch::Tensor sparse = torch::sparse_coo_tensor(indices, torch::tensor({1.0f, 2.0f, 3.0f}), {4});
  CaptureList list(TensorKind::kGrad, Entries({"emb.weight"}));
  Result<Captured> got = list.Capture({sparse});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectRecord(got->records[0], Want("emb.weight", TensorKind::kGrad, torch::tensor({1.0f, 0.0f, 5.0f, 0.0f}), true));
}

// The probe hands over the parameters themselves, not detached views: their values are read, a
// view's too (made contiguous with autograd off).
TEST(CaptureListTest, AParameterThatRequiresGradIsReadAsItsValues) {
  const torch::Tensor p = torch::randn({6, 3}).requires_grad_(true);
  CaptureList list(TensorKind::kParam, Entries({"p", "p.t"}));
  Result<Captured> got = list.Capture({p, p.t()});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectRecord(got->records[0], Want("p", TensorKind::kParam, p.detach(), true));
  ExpectRecord(got->records[1], Want("p.t", TensorKind::kParam, p.detach().t(), true));
}

TEST(CaptureListTest, ACountOtherThanTheListsIsAnError) {
  CaptureList list(TensorKind::kParam, Entries({"a", "b"}));
  Result<Captured> got = list.Capture({torch::ones({2})});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("1 tensors for a list of 2"), std::string::npos) << got.status().ToString();
}

// Two threads of a program capturing the same list: each gets the records of its own tensors.
TEST(CaptureListTest, TwoThreadsCapturingOneListEachGetTheirOwnRecords) {
  CaptureList list(TensorKind::kParam, Entries({"a", "b", "c"}));
  const std::vector<torch::Tensor> mine[2] = {{torch::ones({64}), torch::zeros({3}), torch::arange(5.0)},
                                              {torch::full({64}, 2.0f), torch::ones({7}), torch::arange(9.0)}};
  std::vector<TensorRecord> want[2];
  for (int k = 0; k < 2; ++k) {
    for (size_t i = 0; i < 3; ++i) want[k].push_back(Want(std::string(1, 'a' + i), TensorKind::kParam, mine[k][i], true));
  }
  int wrong[2] = {0, 0};
  auto run = [&](int k) {
    for (int n = 0; n < 200; ++n) {
      Result<Captured> got = list.Capture(mine[k]);
      if (!got.ok() || got->records.size() != 3) {
        ++wrong[k];
        continue;
      }
      for (size_t i = 0; i < 3; ++i) wrong[k] += !(got->records[i].digest == want[k][i].digest) || got->records[i].numel != want[k][i].numel;
    }
  };
  std::thread a(run, 0), b(run, 1);
  a.join();
  b.join();
  EXPECT_EQ(wrong[0], 0);
  EXPECT_EQ(wrong[1], 0);
}

}  // namespace
}  // namespace lockstep::probe
