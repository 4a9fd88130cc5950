#include "harness/scenario/ranks_override.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lockstep {
namespace {

using ::testing::HasSubstr;

Scenario Named(const char* name) {
  Scenario s;
  s.name = name;
  s.location.file = std::string("scenarios/") + name + ".yaml";
  return s;
}

TEST(RanksOverrideTest, SetsTheWorldSize) {
  Scenario s = Named("clean/ddp_mlp");
  ASSERT_TRUE(OverrideRanks(1, s).ok());
  EXPECT_EQ(s.ranks, 1);
  ASSERT_TRUE(OverrideRanks(8, s).ok());
  EXPECT_EQ(s.ranks, 8);
}

TEST(RanksOverrideTest, MultiSliceNeedsAMultipleOfSlices) {
  Scenario s = Named("clean/multislice");
  s.ranks = 4;
  s.slices = 2;
  Status st = OverrideRanks(3, s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("scenarios/clean/multislice.yaml: scenario clean/multislice: 3 ranks do not "
                                      "split into its 2 slices"));
  EXPECT_EQ(s.ranks, 4) << "unchanged on error";
  EXPECT_TRUE(OverrideRanks(6, s).ok());
  EXPECT_EQ(s.ranks, 6);
}

TEST(RanksOverrideTest, InjectionsAndExpectationsMustFindTheirRanks) {
  Scenario s = Named("inject/bitflip");
  Injection bitflip;
  bitflip.kind = "bitflip";
  bitflip.ranks = {1};
  s.inject.push_back(bitflip);
  Status st = OverrideRanks(1, s);
  EXPECT_THAT(st.message(), HasSubstr("its bitflip injection acts on rank 1, which a world of 1 does not have"));
  EXPECT_EQ(s.ranks, 2);

  s.inject.clear();
  ExpectedFinding expected;
  expected.checker = "replica_weights";
  expected.ranks = {0, 3};
  s.expect_fail.push_back(expected);
  st = OverrideRanks(3, s);
  EXPECT_THAT(st.message(), HasSubstr("expects a replica_weights finding on rank 3, which a world of 3"));
  EXPECT_TRUE(OverrideRanks(4, s).ok());
}

TEST(RanksOverrideTest, OutOfRange) {
  Scenario s = Named("x");
  EXPECT_THAT(OverrideRanks(0, s).message(), HasSubstr("ranks 0 is outside [1, 65536]"));
  EXPECT_THAT(OverrideRanks(65537, s).message(), HasSubstr("outside"));
  EXPECT_EQ(s.ranks, 2);
}

}  // namespace
}  // namespace lockstep
