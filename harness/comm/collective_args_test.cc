#include "harness/comm/collective_args.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <stdexcept>

#include "harness/capture/dtype_name.h"

namespace lockstep {
namespace {

TEST(CollectiveArgsTest, NamesAreTheTraceVocabulary) {
  EXPECT_STREQ(ToString(CollectiveOp::kAllReduce), "all_reduce");
  EXPECT_STREQ(ToString(CollectiveOp::kAllGather), "all_gather");
  EXPECT_STREQ(ToString(CollectiveOp::kReduceScatter), "reduce_scatter");
  EXPECT_STREQ(ToString(CollectiveOp::kBroadcast), "broadcast");
  EXPECT_STREQ(ToString(CollectiveOp::kBarrier), "barrier");
  EXPECT_STREQ(ToString(ReduceOp::kSum), "sum");
  EXPECT_STREQ(ToString(ReduceOp::kAvg), "avg");
  EXPECT_STREQ(ToString(ReduceOp::kMax), "max");
  EXPECT_EQ(DtypeName(torch::kFloat32), "float32");
  EXPECT_EQ(DtypeName(torch::kBFloat16), "bfloat16");
  EXPECT_EQ(DtypeName(torch::kUInt8), "uint8");
  EXPECT_EQ(DtypeName(torch::kInt64), "int64");
  EXPECT_EQ(DtypeName(torch::kBool), "bool");
}

TEST(CollectiveArgsTest, ChecksSayWhatIsWrong) {
  EXPECT_EQ(CallContext(3, "slice1", "all_reduce"), "rank 3 group slice1: all_reduce");
  EXPECT_TRUE(CheckAllReduceArgs(torch::zeros({4})).ok());
  EXPECT_EQ(CheckAllReduceArgs(torch::zeros({4, 4}).t()).message(), "tensor is not contiguous");
  EXPECT_EQ(CheckAllReduceArgs(torch::Tensor()).message(), "tensor is an undefined tensor");
  EXPECT_EQ(CheckAllReduceArgs(torch::zeros({2}, torch::kBool)).message(), "cannot reduce a bool tensor");
  EXPECT_EQ(CheckAllGatherArgs(torch::zeros({2}), torch::zeros({4}, torch::kInt64), 2).message(),
            "input is float32 but output is int64");
  EXPECT_TRUE(CheckAllGatherArgs(torch::zeros({2, 3}), torch::zeros({12}), 2).ok());
  EXPECT_EQ(CheckReduceScatterArgs(torch::zeros({6}), torch::zeros({2}), 2).message(),
            "input has 6 elements, expected 2 x 2");
  EXPECT_EQ(CheckBroadcastArgs(torch::zeros({1}), 2, 2).message(), "root 2 is outside the group of 2");
  EXPECT_EQ(CheckSplitArgs(-1, "x").message(), "color must be >= 0, got -1");
  EXPECT_EQ(CheckSplitArgs(0, "").message(), "a sub-group needs a name");
}

TEST(CollectiveArgsTest, DivideTruncatesIntegersLikeNcclAvg) {
  torch::Tensor ints = torch::tensor({7, -7, 8}, torch::kInt64);
  DivideInPlace(ints, 2);
  EXPECT_TRUE(torch::equal(ints, torch::tensor({3, -3, 4}, torch::kInt64)));
  torch::Tensor floats = torch::tensor({7.0f, -7.0f});
  DivideInPlace(floats, 2);
  EXPECT_TRUE(torch::equal(floats, torch::tensor({3.5f, -3.5f})));
}

TEST(CollectiveArgsTest, GuardCallTurnsExceptionsIntoStatuses) {
  Status s = GuardCall(2, "world", "all_reduce", []() -> Status {
    torch::zeros({2}).view({3});  // a LibTorch error
    return Status::Ok();
  });
  EXPECT_EQ(s.code(), StatusCode::kCommunication);
  EXPECT_EQ(s.message().rfind("rank 2 group world: all_reduce: ", 0), 0u) << s.message();
  EXPECT_EQ(s.message().find("Exception raised from"), std::string::npos) << "no C++ backtrace in messages";
  Status t = GuardCall(0, "g", "barrier", []() -> Status { throw std::runtime_error("socket closed"); });
  EXPECT_EQ(t.message(), "rank 0 group g: barrier: socket closed");
}

}  // namespace
}  // namespace lockstep
