#include "checkers/discovery_count_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

DiscoveryRecord Call(int call, const std::string& name, const std::string& phase, int64_t step,
                     const std::string& where = "") {
  return DiscoveryRecord{call, phase, step, name, where, ""};
}

// What lockstep-rank records on the mpi backend: its topology, MPI_Init_thread, the world's dup
// and the two splits of a multi-slice run, all at start-up.
void AddStartupCalls(RankTrace& t) {
  t.discoveries.push_back(Call(2, "mpi.init_thread", "startup", 0));
  t.discoveries.push_back(Call(3, "mpi.comm_dup", "startup", 0));
  t.discoveries.push_back(Call(4, "mpi.comm_split", "startup", 0));
  t.discoveries.push_back(Call(5, "mpi.comm_split", "startup", 0));
}

TEST(DiscoveryCountCheckerTest, QuietWhenEveryCallIsAtStartup) {
  CannedRun run(4, 3);
  for (RankTrace& t : run.traces) AddStartupCalls(t);
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}

TEST(DiscoveryCountCheckerTest, NamesEveryCallAfterStartupWithItsStepPhaseAndOrigin) {
  CannedRun run(4, 5);
  for (RankTrace& t : run.traces) AddStartupCalls(t);
  run.traces[1].discoveries.push_back(Call(6, "lockstep.topology", "attention_forward", 3));
  run.traces[1].discoveries.push_back(Call(7, "mpi.comm_split", "attention_forward", 3));
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "discovery_count");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].message,
            "discovery ran again: rank 1: lockstep.topology at step 3 in attention_forward, call 6 of the process, "
            "after start-up, mpi.comm_split at step 3 in attention_forward, call 7 of the process, after start-up");
  EXPECT_EQ(f[0].details.at("calls"), "lockstep.topology, mpi.comm_split");
  EXPECT_EQ(f[0].details.at("call mpi.comm_split"), "MPI_Comm_split: a new communicator");
  EXPECT_EQ(f[0].details.at("rank1_count"), "7");
}

TEST(DiscoveryCountCheckerTest, AllRanksInOneFindingAtTheEarliestStepWithThePythonStack) {
  CannedRun run(2, 5);
  run.traces[0].discoveries.push_back(Call(2, "torch.new_group", "step", 4, "model.py:41 in forward < train.py:80 in main"));
  run.traces[1].discoveries.push_back(Call(2, "torch.new_group", "step", 2));
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].step, 2);
  EXPECT_NE(f[0].message.find("torch.new_group at step 4 in step (from model.py:41 in forward < train.py:80 in main)"),
            std::string::npos)
      << f[0].message;
}

// MPI_Init twice is wrong even at start-up; a second communicator there is not.
TEST(DiscoveryCountCheckerTest, AOncePerProcessCallTwiceAtStartupFires) {
  CannedRun run(2, 3);
  run.traces[0].discoveries.push_back(Call(2, "mpi.init", "startup", 0));
  run.traces[0].discoveries.push_back(Call(3, "mpi.init", "startup", 0));
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
  EXPECT_EQ(f[0].step, 0);
  EXPECT_NE(f[0].message.find("mpi.init at step 0 in startup, call 3 of the process, once per process"), std::string::npos)
      << f[0].message;
}

TEST(DiscoveryCountCheckerTest, HonoursTheScenariosAllowance) {
  CannedRun run(2, 5);
  run.scenario.discovery_allowed["torch.new_group"] = 2;  // an evaluation group made at step 4, say
  for (RankTrace& t : run.traces) {
    t.discoveries.push_back(Call(2, "torch.new_group", "startup", 0));
    t.discoveries.push_back(Call(3, "torch.new_group", "step", 4));
  }
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
  run.traces[1].discoveries.push_back(Call(4, "torch.new_group", "step", 5));
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].step, 5);
  EXPECT_NE(f[0].message.find("allowed 2 times"), std::string::npos) << f[0].message;
}

// Traces of lockstep.trace/1.0 before calls had names (read as lockstep.topology): a second
// topology discovery is still caught, and `expect.discovery_calls: 2` still allows it.
TEST(DiscoveryCountCheckerTest, UnnamedTopologyCallsOfOlderTracesStillCount) {
  CannedRun run(2, 5);
  run.traces[1].discoveries.push_back(Call(2, kTopologyDiscovery, "attention_forward", 3));
  ASSERT_EQ(DiscoveryCountChecker().Check(run.Context()).size(), 1u);
  run.scenario.discovery_allowed[kTopologyDiscovery] = 2;
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}

TEST(DiscoveryCountCheckerTest, ARankThatDiedBeforeDiscoveryIsNotJudged) {
  CannedRun run(2, 3);
  run.traces[1].discoveries.clear();
  run.traces[1].steps.clear();
  run.traces[1].footer.reset();
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}


TEST(DiscoveryCountCheckerTest, AMeshAtStartupAndGroupsDestroyedAtTheEndAreQuiet) {
  CannedRun run(4, 3);
  for (RankTrace& t : run.traces) {
    t.discoveries.push_back(Call(2, "torch.init_process_group", "startup", 0));
    t.discoveries.push_back(Call(3, "torch.init_device_mesh", "startup", 0));
    t.discoveries.push_back(Call(4, "torch.destroy_process_group", "step", 3));  // teardown
  }
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}

TEST(DiscoveryCountCheckerTest, AMeshMadeMidRunFires) {
  CannedRun run(2, 3);
  run.traces[1].discoveries.push_back(Call(2, "torch.init_device_mesh", "step", 2, "train.py:40 in step"));
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_NE(f[0].message.find("torch.init_device_mesh at step 2 in step"), std::string::npos) << f[0].message;
}

TEST(DiscoveryCountCheckerTest, GroupsMadeAndDestroyedInALoopAreCountedInTheFinding) {
  CannedRun run(2, 4);
  for (RankTrace& t : run.traces) {
    int call = 2;
    for (int64_t step = 1; step <= 3; ++step) {
      t.discoveries.push_back(Call(call++, "torch.new_group", "step", step));
      t.discoveries.push_back(Call(call++, "torch.destroy_process_group", "step", step));
    }
  }
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].step, 1);
  EXPECT_NE(f[0].message.find("and 3 groups destroyed after start-up (groups made and destroyed in a loop)"),
            std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].details.at("rank0_destroyed"), "3");
  EXPECT_EQ(f[0].message.find("torch.destroy_process_group at"), std::string::npos)
      << "a destroy is counted, not judged as a call: " << f[0].message;
}

}  // namespace
}  // namespace lockstep
