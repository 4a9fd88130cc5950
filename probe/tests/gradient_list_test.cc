#include "probe/gradient_list.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/capture/tensor_digest.h"

namespace lockstep::probe {
namespace {

std::shared_ptr<CaptureList> ListOf(const std::vector<std::string>& names) {
  std::vector<ListedTensor> entries;
  for (const std::string& n : names) entries.push_back(ListedTensor{n, true, nullptr});
  return std::make_shared<CaptureList>(TensorKind::kGrad, entries);
}

// Each step's gradients (new tensors every step, as after zero_grad(set_to_none=True)) are read
// from the parameters: the records are those of the gradients as they are at that capture.
TEST(GradientListTest, EachCaptureReadsTheGradientsTheParametersHoldThen) {
  torch::Tensor a = torch::randn({4, 3}, torch::requires_grad());
  torch::Tensor frozen = torch::randn({2});
  torch::Tensor b = torch::randn({5}, torch::requires_grad());
  auto list = GradientList::Make(ListOf({"a", "b"}), {a, frozen, b}, {true, false, true});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  for (int step = 0; step < 3; ++step) {
    a.mutable_grad() = torch::full({4, 3}, static_cast<float>(step));
    b.mutable_grad() = torch::randn({5});
    auto got = (*list)->Capture();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(got->has_value()) << "step " << step;
    const std::vector<TensorRecord>& records = (*got)->records;
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].name, "a");
    EXPECT_EQ(records[0].kind, TensorKind::kGrad);
    EXPECT_EQ(records[0].digest, DigestTensor(a.grad())) << "step " << step;
    EXPECT_EQ(records[0].norm, TensorL2Norm(a.grad()));
    EXPECT_EQ(records[1].name, "b");
    EXPECT_EQ(records[1].digest, DigestTensor(b.grad())) << "step " << step;
  }
}

// Which parameters hold a gradient changed: a gradient gone, or one where none was. The list
// captures nothing and says so (the probe lists the gradients anew).
TEST(GradientListTest, AListWhoseParametersHoldOtherGradientsCapturesNothing) {
  torch::Tensor a = torch::randn({3}, torch::requires_grad());
  torch::Tensor b = torch::randn({3}, torch::requires_grad());
  auto list = GradientList::Make(ListOf({"a"}), {a, b}, {true, false});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  a.mutable_grad() = torch::ones({3});
  auto held = (*list)->Capture();
  ASSERT_TRUE(held.ok() && held->has_value());

  b.mutable_grad() = torch::ones({3});
  auto gained = (*list)->Capture();
  ASSERT_TRUE(gained.ok()) << gained.status().ToString();
  EXPECT_FALSE(gained->has_value()) << "b has a gradient the list does not name";

  b.mutable_grad() = torch::Tensor();
  a.mutable_grad() = torch::Tensor();
  auto lost = (*list)->Capture();
  ASSERT_TRUE(lost.ok()) << lost.status().ToString();
  EXPECT_FALSE(lost->has_value()) << "a's gradient is gone";
}

// A sparse gradient (nn.Embedding(sparse=True)) is digested as its dense values, as the capture
// list digests it.
TEST(GradientListTest, ASparseGradientIsItsDenseValues) {
  torch::Tensor w = torch::zeros({4, 2}, torch::requires_grad());
  const torch::Tensor dense = torch::tensor({{0.0f, 0.0f}, {1.0f, 2.0f}, {0.0f, 0.0f}, {3.0f, 4.0f}});
  w.mutable_grad() = dense.to_sparse();
  auto list = GradientList::Make(ListOf({"w"}), {w}, {true});
  ASSERT_TRUE(list.ok());
  auto got = (*list)->Capture();
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().ToString();
  EXPECT_EQ((*got)->records[0].digest, DigestTensor(dense));
}

TEST(GradientListTest, CountsThatDisagreeAreAnError) {
  torch::Tensor a = torch::randn({3}, torch::requires_grad());
  EXPECT_FALSE(GradientList::Make(ListOf({"a", "b"}), {a}, {true}).ok()) << "two names, one gradient present";
  EXPECT_FALSE(GradientList::Make(ListOf({"a"}), {a}, {true, true}).ok()) << "two flags, one parameter";
  EXPECT_FALSE(GradientList::Make(nullptr, {a}, {true}).ok());
}

}  // namespace
}  // namespace lockstep::probe
