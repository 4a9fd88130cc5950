#include "harness/scenario/scenario_overrides.h"

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

namespace lockstep {
namespace {

TEST(ApplyOverridesTest, EveryOverrideLandsAndAnAddedCheckIsNotRepeated) {
  Scenario s;
  s.name = "a";
  s.checks = {"replica_weights"};
  ScenarioOverrides o;
  o.backend = Backend::kGloo;
  o.device = Device::kCuda;
  o.ranks = 4;
  o.hang_timeout_s = 7;
  o.startup_timeout_s = 9;
  o.extra_checks = {"replica_weights", "determinism"};
  Result<Scenario> r = ApplyOverrides(o, s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->backend, Backend::kGloo);
  EXPECT_EQ(r->device, Device::kCuda);
  EXPECT_EQ(r->ranks, 4);
  EXPECT_EQ(r->hang_timeout_s, 7);
  EXPECT_EQ(r->startup_timeout_s, 9);
  EXPECT_EQ(r->checks, (std::vector<std::string>{"replica_weights", "determinism"}));
}

TEST(ApplyOverridesTest, NoOverrideChangesNothing) {
  Scenario s;
  s.ranks = 3;
  s.backend = Backend::kMpi;
  Result<Scenario> r = ApplyOverrides({}, s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ranks, 3);
  EXPECT_EQ(r->backend, Backend::kMpi);
}

TEST(ApplyOverridesTest, ARanksOverrideThatBreaksARuleNamesTheFlag) {
  Scenario s;
  s.name = "sliced";
  s.slices = 2;
  ScenarioOverrides o;
  o.ranks = 3;
  Result<Scenario> r = ApplyOverrides(o, s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), ::testing::StartsWith("--ranks: "));
}

}  // namespace
}  // namespace lockstep
