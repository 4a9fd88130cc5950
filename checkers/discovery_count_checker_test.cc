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


// --- On a GPU: what the first GPU run (2026-11-26, one H100, torch 2.11+cu130, NCCL 2.28.9)
// recorded on every rank of every clean scenario, and the bugs beside it. -------------------------

// The frames the CUPTI recorder gave the two device counts at step 1 on every rank: cuBLAS and
// cuBLASLt each carry their own statically linked CUDA runtime, which initializes (under
// pthread_once, the libc frame) at the library's first use, the first matmul, and asks the driver
// for the device count.
constexpr const char* kCublasFrames = "libcublas.so.13+0x597374 < libcublas.so.13+0x5a9b48 < libc.so.6+0xa1fb3";
constexpr const char* kCublasLtFrames = "libcublasLt.so.13+0x716a504 < libcublasLt.so.13+0x717ccd8 < libc.so.6+0xa1fb3";
// The world's NCCL communicator, named by the profiler plugin as on every rank of it.
constexpr const char* kWorldComm = "nccl:5a1c0de2f00d0001/4";

DiscoveryRecord CommInit(int call, const std::string& comm, const std::string& phase, int64_t step) {
  return DiscoveryRecord{call, phase, step, "nccl.comm_init", "", comm};
}

// One rank of a clean run on CUDA as the recorders saw it: start-up (lockstep's topology with the
// CUDA runtime's first initialization under it, the driver's first cuInit), then at step 1 the
// math libraries' lazy start and the world communicator made at its first collective
// (ProcessGroupNCCL without a device_id makes it there, not in init_process_group).
void AddCleanCudaRun(RankTrace& t) {
  t.discoveries.push_back(Call(2, "cuda.init", "startup", 0, "the cuInit that loaded lockstep's CUPTI recorder"));
  t.discoveries.push_back(Call(3, "cuda.device_count", "startup", 0, "lockstep::DiscoverTopology+0x1c (lockstep-rank)"));
  t.discoveries.push_back(Call(4, "cuda.device_count", "startup", 0, "lockstep::DiscoverTopology+0x1c (lockstep-rank)"));
  t.discoveries.push_back(Call(5, "torch.init_process_group", "startup", 0, "train.py:20 in main"));
  t.discoveries.push_back(Call(6, "cuda.device_count", "step", 1, kCublasFrames));
  t.discoveries.push_back(Call(7, "cuda.device_count", "step", 1, kCublasLtFrames));
  t.discoveries.push_back(CommInit(8, kWorldComm, "step", 1));
}

CannedRun CleanCudaRun(int ranks = 4, int64_t steps = 5) {
  CannedRun run(ranks, steps);
  for (RankTrace& t : run.traces) AddCleanCudaRun(t);
  return run;
}

TEST(DiscoveryCountCheckerTest, QuietOnACleanCudaRunWhoseLibrariesStartAtTheFirstStep) {
  CannedRun run = CleanCudaRun();
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}

// A device count at any step is a question, not discovery: even many of them, mid-run.
TEST(DiscoveryCountCheckerTest, DeviceCountsAfterStartupAreQueriesNotDiscovery) {
  CannedRun run = CleanCudaRun(2, 5);
  for (int64_t step = 2; step <= 5; ++step) {
    run.traces[0].discoveries.push_back(Call(static_cast<int>(7 + step), "cuda.device_count", "step", step));
  }
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}

// The first successful cuInit of a process may come late (a program that touches CUDA first in
// its first step): it is the driver's one-time start, not a second one.
TEST(DiscoveryCountCheckerTest, ALateFirstCuInitIsQuietASecondFires) {
  CannedRun run(2, 3);
  run.traces[0].discoveries.push_back(Call(2, "cuda.init", "step", 1));
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
  run.traces[0].discoveries.push_back(Call(3, "cuda.init", "step", 2));
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
  EXPECT_EQ(f[0].step, 2);
  EXPECT_NE(f[0].message.find("cuda.init at step 2 in step, call 3 of the process, once per process"),
            std::string::npos) << f[0].message;
}

// The seed bug on CUDA: lockstep's double_discovery on rank 1 at step 3 runs the topology routine
// again inside the attention forward, which asks CUDA for the device count again.
TEST(DiscoveryCountCheckerTest, DoubleDiscoveryOnCudaFiresAtItsStepAndRankWithTheDeviceCountAsEvidence) {
  CannedRun run = CleanCudaRun();
  run.traces[1].discoveries.push_back(
      Call(9, "cuda.device_count", "attention_forward", 3, "lockstep::DiscoverTopology+0x1c (lockstep-rank)"));
  run.traces[1].discoveries.push_back(Call(10, "lockstep.topology", "attention_forward", 3));
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].message,
            "discovery ran again: rank 1: lockstep.topology at step 3 in attention_forward, call 10 of the process, "
            "after start-up");
  EXPECT_EQ(f[0].details.at("calls"), "lockstep.topology");
  // The queries of the rank after start-up, the math libraries' included, are its evidence.
  EXPECT_EQ(f[0].details.at("rank1_queries"),
            std::string("cuda.device_count at step 1 in step (from ") + kCublasFrames + "), call 6, " +
                "cuda.device_count at step 1 in step (from " + kCublasLtFrames + "), call 7, " +
                "cuda.device_count at step 3 in attention_forward (from lockstep::DiscoverTopology+0x1c "
                "(lockstep-rank)), call 9");
}

// The flash-attention case: the second discovery runs while the first step is traced, at the same
// step as the libraries' lazy start; it is still caught, and only on its rank.
TEST(DiscoveryCountCheckerTest, DoubleDiscoveryInTheFirstStepsForwardFiresBesideTheLibrariesLazyStart) {
  CannedRun run(4, 5);
  for (RankTrace& t : run.traces) {
    t.discoveries.push_back(Call(2, "cuda.init", "startup", 0));
    t.discoveries.push_back(Call(3, "cuda.device_count", "startup", 0));
  }
  RankTrace& r1 = run.traces[1];
  r1.discoveries.push_back(Call(4, "cuda.device_count", "attention_forward", 1));
  r1.discoveries.push_back(Call(5, "lockstep.topology", "attention_forward", 1));
  for (RankTrace& t : run.traces) {
    const int next = static_cast<int>(t.discoveries.size()) + 1;
    t.discoveries.push_back(Call(next, "cuda.device_count", "step", 1, kCublasFrames));
    t.discoveries.push_back(Call(next + 1, "cuda.device_count", "step", 1, kCublasLtFrames));
  }
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 1);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_NE(f[0].message.find("lockstep.topology at step 1 in attention_forward, call 5 of the process, after start-up"),
            std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].message.find("cuda.device_count"), std::string::npos) << f[0].message;
}

// A group made in the forward at step 3 (the probe's torch.new_group on every rank, ranks 0 and 1
// its members): the group is the finding; its communicator, made at once for ranks that had none
// together, is its first use and is not listed again.
TEST(DiscoveryCountCheckerTest, ANewGroupInAForwardAtStep3Fires) {
  CannedRun run = CleanCudaRun();
  for (int r = 0; r < 4; ++r) {
    run.traces[r].discoveries.push_back(
        Call(9, "torch.new_group", "step", 3, "model.py:41 in forward < train.py:80 in main"));
    if (r < 2) run.traces[r].discoveries.push_back(CommInit(10, "nccl:77e0aa0100000002/2", "step", 3));
  }
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f[0].details.at("calls"), "torch.new_group");
  EXPECT_NE(f[0].message.find("rank 0: torch.new_group at step 3 in step (from model.py:41 in forward < train.py:80 "
                              "in main), call 9 of the process, after start-up"),
            std::string::npos) << f[0].message;
}

// NCCL communicators made again mid-run (per call, or after an abort) for ranks that have one:
// no Python group call to see, only the profiler plugin's record of the new communicator.
TEST(DiscoveryCountCheckerTest, ASecondCommunicatorForTheSameRanksFires) {
  CannedRun run = CleanCudaRun();
  for (RankTrace& t : run.traces) t.discoveries.push_back(CommInit(9, "nccl:0badc0de00000003/4", "step", 3));
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(f[0].message.find("rank 2: nccl.comm_init at step 3 in step, call 9 of the process, a second communicator "
                              "for ranks [0, 1, 2, 3] (nccl:0badc0de00000003/4; nccl:5a1c0de2f00d0001/4 was first)"),
            std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].details.at("call nccl.comm_init"),
            "ncclCommInitRank & co. (seen by the NCCL profiler plugin): a new NCCL communicator");
}

// A communicator for other ranks (a pair's, for send/recv, made at its first use) is a first use.
TEST(DiscoveryCountCheckerTest, ACommunicatorForOtherRanksMadeMidRunIsAFirstUse) {
  CannedRun run = CleanCudaRun();
  for (int r : {1, 2}) run.traces[r].discoveries.push_back(CommInit(9, "nccl:00000000000b0012/2", "step", 2));
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}

// A group built at start-up over the ranks of the world gets its own communicator at its first
// collective, later; one such communicator per group built at start-up, and not one more.
TEST(DiscoveryCountCheckerTest, AGroupBuiltAtStartupAccountsForOneLaterCommunicatorOverTheSameRanks) {
  CannedRun run = CleanCudaRun(2, 5);
  for (RankTrace& t : run.traces) {
    t.discoveries.insert(t.discoveries.begin() + 4, Call(5, "torch.new_group", "startup", 0));
    t.discoveries.push_back(CommInit(9, "nccl:00000000000c0001/2", "step", 2));
  }
  // The fixture's world is 4 ranks wide in name: give both communicators the same size.
  for (RankTrace& t : run.traces) {
    for (DiscoveryRecord& d : t.discoveries) {
      if (d.comm == kWorldComm) d.comm = "nccl:5a1c0de2f00d0001/2";
    }
  }
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
  run.traces[0].discoveries.push_back(CommInit(10, "nccl:00000000000c0002/2", "step", 4));
  run.traces[1].discoveries.push_back(CommInit(10, "nccl:00000000000c0002/2", "step", 4));
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 4);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_NE(f[0].message.find("nccl.comm_init at step 4 in step, call 10 of the process, a second communicator"),
            std::string::npos) << f[0].message;
}

TEST(DiscoveryCountCheckerTest, TheSameCommunicatorInitializedTwiceFires) {
  CannedRun run = CleanCudaRun(2, 3);
  run.traces[1].discoveries.push_back(CommInit(9, "nccl:5a1c0de2f00d0001/4 (world)", "step", 2));
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_NE(f[0].message.find("the same communicator (nccl:5a1c0de2f00d0001/4) initialized again"), std::string::npos)
      << f[0].message;
}

// A scenario that makes communicators on purpose says so; the allowance counts every init.
TEST(DiscoveryCountCheckerTest, TheAllowanceCoversCommunicatorsToo) {
  CannedRun run = CleanCudaRun(2, 5);
  for (RankTrace& t : run.traces) t.discoveries.push_back(CommInit(9, "nccl:0badc0de00000003/4", "step", 3));
  ASSERT_EQ(DiscoveryCountChecker().Check(run.Context()).size(), 1u);
  run.scenario.discovery_allowed["nccl.comm_init"] = 2;
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}

}  // namespace
}  // namespace lockstep
