#include "harness/scenario/scenario.h"

#include <gtest/gtest.h>

#include <set>

namespace lockstep {
namespace {

// Every row reads back both ways and no name is used twice.
template <typename Enum>
void ExpectTableReadsBothWays() {
  std::set<std::string_view> names;
  for (const auto& [name, value] : NamesOf<Enum>()) {
    EXPECT_TRUE(names.insert(name).second) << name << " is listed twice";
    EXPECT_EQ(ToString(value), name);
    EXPECT_EQ(FromString<Enum>(name), value) << name;
  }
  EXPECT_EQ(FromString<Enum>("no_such_name"), std::nullopt);
  EXPECT_EQ(NameList<Enum>().size(), NamesOf<Enum>().size());
}

TEST(ScenarioNamesTest, EveryTableReadsBothWays) {
  ExpectTableReadsBothWays<Backend>();
  ExpectTableReadsBothWays<Device>();
  ExpectTableReadsBothWays<ModelKind>();
  ExpectTableReadsBothWays<AttentionKind>();
  ExpectTableReadsBothWays<NormKind>();
  ExpectTableReadsBothWays<ParallelMode>();
  ExpectTableReadsBothWays<OptimizerKind>();
}

// Every value of each enum has a row (a value without one would print as "unknown").
TEST(ScenarioNamesTest, EveryValueHasAName) {
  for (Backend v : {Backend::kMpi, Backend::kGloo, Backend::kNccl}) EXPECT_STRNE(ToString(v), "unknown");
  for (Device v : {Device::kCpu, Device::kCuda}) EXPECT_STRNE(ToString(v), "unknown");
  for (ModelKind v : {ModelKind::kMlp, ModelKind::kTransformer}) EXPECT_STRNE(ToString(v), "unknown");
  for (AttentionKind v : {AttentionKind::kNaive, AttentionKind::kFlash, AttentionKind::kSdpa}) {
    EXPECT_STRNE(ToString(v), "unknown");
  }
  for (NormKind v : {NormKind::kNone, NormKind::kLayerNorm, NormKind::kBatchNorm}) EXPECT_STRNE(ToString(v), "unknown");
  for (ParallelMode v : {ParallelMode::kDdp, ParallelMode::kZero1}) EXPECT_STRNE(ToString(v), "unknown");
  for (OptimizerKind v : {OptimizerKind::kSgd, OptimizerKind::kAdamW}) EXPECT_STRNE(ToString(v), "unknown");
  EXPECT_EQ(NameList<Backend>().front(), "mpi");  // the default, first in error messages
  EXPECT_EQ(NameList<Device>().front(), "cpu");
}

// nccl moves only CUDA tensors, so it overrides `device`; mpi and gloo keep what the scenario says.
TEST(ScenarioNamesTest, NcclAlwaysRunsOnCuda) {
  Scenario s;
  EXPECT_EQ(EffectiveDevice(s), Device::kCpu);
  s.device = Device::kCuda;
  EXPECT_EQ(EffectiveDevice(s), Device::kCuda);
  s.backend = Backend::kGloo;
  EXPECT_EQ(EffectiveDevice(s), Device::kCuda);
  s.device = Device::kCpu;
  EXPECT_EQ(EffectiveDevice(s), Device::kCpu);
  s.backend = Backend::kNccl;
  EXPECT_EQ(EffectiveDevice(s), Device::kCuda);
}

}  // namespace
}  // namespace lockstep
