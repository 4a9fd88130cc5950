#include "harness/launcher/launcher_kind.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lockstep {
namespace {

using ::testing::HasSubstr;

const LauncherKind kEvery[] = {LauncherKind::kMpirun, LauncherKind::kSrun,     LauncherKind::kLocal,
                               LauncherKind::kNone,   LauncherKind::kTorchrun, LauncherKind::kAccelerate};

TEST(LauncherKindTest, EveryKindHasItsRowAndItsNameReadsBack) {
  EXPECT_EQ(NamesOf<LauncherKind>().size(), std::size(kEvery));
  for (LauncherKind kind : kEvery) {
    EXPECT_EQ(KindInfo(kind).kind, kind);
    EXPECT_EQ(FromString<LauncherKind>(ToString(kind)), kind) << ToString(kind);
  }
  EXPECT_TRUE(KindInfo(LauncherKind::kLocal).direct);
  EXPECT_TRUE(KindInfo(LauncherKind::kNone).direct);
  EXPECT_FALSE(KindInfo(LauncherKind::kMpirun).direct);
  EXPECT_FALSE(KindInfo(LauncherKind::kSrun).resolves_program_here);
}

TEST(LauncherKindTest, LocalPlansOneCommandPerRank) {
  LaunchSpec spec;
  spec.kind = LauncherKind::kLocal;
  spec.ranks = 3;
  spec.rank_command = {"/bin/true", "--x"};
  spec.trace_dir = "/tmp/t";
  spec.log_dir = "/tmp/l";
  Result<LaunchPlan> plan = PlanLaunch(spec, "h");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->commands.size(), 3u);
  EXPECT_EQ(plan->command_rank, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(plan->commands[2].env.at("RANK"), "2");
  EXPECT_THAT(plan->summary, HasSubstr("local x3: "));
}

TEST(LauncherKindTest, AMissingProgramIsNamedAndSrunsIsLeftToTheNodes) {
  LaunchSpec spec;
  spec.kind = LauncherKind::kLocal;
  spec.ranks = 1;
  spec.rank_command = {"no-such-program-here"};
  spec.env["PATH"] = "/nonexistent";
  Result<LaunchPlan> plan = PlanLaunch(spec, "h");
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("cannot start the rank program 'no-such-program-here': not found on PATH"));
}

TEST(LauncherKindTest, SrunRunsOnNodesAndTheOthersWhenGivenNodes) {
  LaunchSpec spec;
  spec.kind = LauncherKind::kSrun;
  EXPECT_TRUE(RunsOnNodes(spec));
  for (LauncherKind kind : {LauncherKind::kTorchrun, LauncherKind::kMpirun}) {
    spec.kind = kind;
    spec.hosts.nodes = 0;
    EXPECT_FALSE(RunsOnNodes(spec)) << ToString(kind);
    spec.hosts.nodes = 2;
    EXPECT_TRUE(RunsOnNodes(spec)) << ToString(kind);
  }
  for (LauncherKind kind : {LauncherKind::kLocal, LauncherKind::kNone, LauncherKind::kAccelerate}) {
    spec.kind = kind;
    EXPECT_FALSE(RunsOnNodes(spec)) << ToString(kind);
  }
}

}  // namespace
}  // namespace lockstep
