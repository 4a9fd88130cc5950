#include "checkers/collective_order_checker.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "checkers/checker_run.h"
#include "checkers/testing/canned_run.h"
#include "harness/core/testing/build_paths.h"
#include "harness/trace/trace_reader.h"

namespace lockstep {
namespace {

using testing::CannedRun;

CollectiveRecord* Seq(CannedRun& run, int rank, const std::string& group, uint64_t seq) {
  for (auto& c : run.traces[rank].collectives) {
    if (c.group == group && c.seq == seq) return &c;
  }
  return nullptr;
}

TEST(CollectiveOrderCheckerTest, QuietOnACleanRun) {
  CannedRun run(4, 5);
  EXPECT_TRUE(CollectiveOrderChecker().Check(run.Context()).empty());
}

TEST(CollectiveOrderCheckerTest, NamesTheFirstDifferingSeqFieldByField) {
  CannedRun run(4, 5);
  CollectiveRecord* c = Seq(run, 1, "world", 5);  // step 3's first all_reduce
  ASSERT_NE(c, nullptr);
  c->op = "all_gather";
  c->count = 4096;
  c->reduce = "";
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "collective_order");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].details.at("group"), "world");
  EXPECT_EQ(f[0].details.at("collective_seq"), "5");
  EXPECT_EQ(f[0].details.at("diff"), "op all_gather vs all_reduce, count 4096 vs 64, reduce none vs avg");
  EXPECT_EQ(f[0].message,
            "group world seq 5 (step 3): rank 1 runs all_gather(float32, 4096) but ranks 0,2,3 run "
            "all_reduce(float32, 64, avg) (op all_gather vs all_reduce, count 4096 vs 64, reduce none vs avg)");
}

// Trace 2.6: where the program called each side's collective, when the records say; a side
// without one (a collective DDP's C++ issued) is left out, and with none the message is as above.
TEST(CollectiveOrderCheckerTest, SaysWhereEachSideCalledItsCollective) {
  CannedRun run(4, 5);
  for (int r = 0; r < 4; ++r) {
    CollectiveRecord* c = Seq(run, r, "world", 5);
    ASSERT_NE(c, nullptr);
    if (r == 0) {
      c->op = "broadcast";
      c->reduce = "";
      c->root = 0;
      c->where = "torch nn/parallel/distributed.py:2172 in _distributed_broadcast_coalesced < eval.py:24 in main";
    } else if (r != 3) {
      c->where = "eval.py:27 in main";
    }
  }
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
  const std::string called_at =
      "rank 0: torch nn/parallel/distributed.py:2172 in _distributed_broadcast_coalesced < eval.py:24 in main; "
      "ranks 1,2,3: eval.py:27 in main";
  EXPECT_EQ(f[0].details.at("called_at"), called_at);
  EXPECT_NE(f[0].message.find("rank 0 runs broadcast(float32, 64, root 0) but ranks 1,2,3 run all_reduce(float32, 64, avg) ("),
            std::string::npos) << f[0].message;
  const std::string tail = ". Called at: " + called_at;
  ASSERT_GT(f[0].message.size(), tail.size());
  EXPECT_EQ(f[0].message.substr(f[0].message.size() - tail.size()), tail) << f[0].message;

  for (int r = 1; r < 4; ++r) Seq(run, r, "world", 5)->where.clear();  // the majority's unknown
  f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].details.at("called_at"),
            "rank 0: torch nn/parallel/distributed.py:2172 in _distributed_broadcast_coalesced < eval.py:24 in main");
}

TEST(CollectiveOrderCheckerTest, AnExtraCollectiveOnOneRank) {
  CannedRun run(4, 4);
  CollectiveRecord extra;
  extra.op = "all_reduce";
  extra.dtype = "float32";
  extra.count = 1;
  extra.reduce = "sum";
  extra.step = 2;
  run.InsertCollective(2, 5, extra);  // after step 2's two all_reduces (seqs 3, 4)
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(f[0].details.at("collective_seq"), "5");
  EXPECT_NE(f[0].message.find("rank 2 runs all_reduce(float32, 1, sum)"), std::string::npos) << f[0].message;
}

TEST(CollectiveOrderCheckerTest, AnExtraCollectiveAtTheEndOfACleanRun) {
  CannedRun run(3, 2);
  CollectiveRecord extra;
  extra.op = "barrier";
  extra.step = 2;
  run.InsertCollective(0, 5, extra);  // seqs 0..4 exist on every rank
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
  EXPECT_EQ(f[0].step, 2);
  EXPECT_NE(f[0].message.find("rank 0 runs an extra collective barrier() at step 2; ranks 1,2 issued only 5"),
            std::string::npos)
      << f[0].message;
}

TEST(CollectiveOrderCheckerTest, ACleanlyExitedRankWithAShorterSequence) {
  CannedRun run(4, 3);
  run.traces[3].collectives.pop_back();  // exited with a footer, one all_reduce short
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{3}));
  EXPECT_EQ(f[0].step, 3);
  EXPECT_NE(f[0].message.find("rank 3 issued only 6 collectives in group world and exited"), std::string::npos)
      << f[0].message;
}

// Lightning#19106 in a multi-slice job: rank 1's extra world barrier at step 2 pairs with nothing,
// the others finish step 2 and then wait for rank 1 in later collectives; nobody exits cleanly.
TEST(CollectiveOrderCheckerTest, AnExtraCollectiveThatHungTheOthers) {
  CannedRun run(4, 4);
  for (int r = 0; r < 4; ++r) run.Cut(r, r == 1 ? 1 : 2);  // rank 1 never finished step 2
  // With slices, a step's gradient sync runs in the slice groups, not in world.
  for (int r : {0, 2, 3}) {
    for (auto& c : run.traces[r].collectives) {
      if (c.step == 2) c.group = "slice" + std::to_string(r / 2);
    }
  }
  CollectiveRecord extra;
  extra.op = "barrier";
  extra.step = 2;
  run.InsertCollective(1, 3, extra);  // seqs 0..2 belong to steps 0 and 1 on every rank
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].step, 2);
  EXPECT_NE(f[0].message.find("went on past that step"), std::string::npos) << f[0].message;
}

TEST(CollectiveOrderCheckerTest, ARankThatDiedIsNotAnOrderProblem) {
  CannedRun run(4, 5);
  run.Cut(2, 2);
  EXPECT_TRUE(CollectiveOrderChecker().Check(run.Context()).empty());
}

TEST(CollectiveOrderCheckerTest, WorldEmptyOnOneRankIsAFinding) {
  CannedRun run(3, 2);
  run.traces[1].collectives.clear();
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].details.at("collective_seq"), "0");
}

TEST(CollectiveOrderCheckerTest, SubGroupsAreComparedAmongTheirMembers) {
  CannedRun run(4, 2);
  for (int r = 0; r < 4; ++r) {
    for (uint64_t seq = 0; seq < 3; ++seq) {
      CollectiveRecord c;
      c.group = "slice" + std::to_string(r / 2);
      c.seq = seq;
      c.op = "reduce_scatter";
      c.dtype = "float32";
      c.count = 16;
      c.reduce = "sum";
      c.step = static_cast<int64_t>(seq);
      c.end_s = 1.0;
      run.traces[r].collectives.push_back(c);
    }
  }
  EXPECT_TRUE(CollectiveOrderChecker().Check(run.Context()).empty());

  run.traces[3].collectives.back().count = 32;  // slice1 seq 2 on rank 3
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].details.at("group"), "slice1");
  EXPECT_EQ(f[0].details.at("collective_seq"), "2");
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2, 3}));  // two members, no majority: both named
  EXPECT_EQ(f[0].details.at("majority"), "none");
  EXPECT_NE(f[0].message.find("every rank that disagrees is named"), std::string::npos) << f[0].message;
}

// A data-parallel run in 2 slices of 2 ranks (ddp/slices=2): the gradients are reduce-scattered
// in the slice (slice0 = ranks 0,1; slice1 = ranks 2,3), all-reduced across slices between the
// ranks at the same place (cross0 = ranks 0,2; cross1 = ranks 1,3), then all-gathered in the
// slice; step 0 is the initial broadcast in world.
CannedRun SlicedRun(int64_t steps) {
  CannedRun run(4, steps);
  for (int r = 0; r < 4; ++r) {
    std::vector<CollectiveRecord>& cs = run.traces[r].collectives;
    cs.resize(1);  // world seq 0: step 0's broadcast
    const std::string slice = "slice" + std::to_string(r / 2);
    const std::string cross = "cross" + std::to_string(r % 2);
    for (int64_t s = 1; s <= steps; ++s) {
      const uint64_t n = static_cast<uint64_t>(s - 1);
      auto add = [&](const std::string& group, uint64_t seq, const std::string& op, int64_t count,
                     const std::string& reduce, int i) {
        CollectiveRecord c;
        c.group = group;
        c.seq = seq;
        c.op = op;
        c.dtype = "float32";
        c.count = count;
        c.reduce = reduce;
        c.step = s;
        c.start_s = 0.1 * static_cast<double>(s) + 0.01 * i;
        c.end_s = c.start_s + 0.005;
        cs.push_back(c);
      };
      add(slice, 2 * n, "reduce_scatter", 2504, "sum", 0);
      add(cross, n, "all_reduce", 1252, "sum", 1);
      add(slice, 2 * n + 1, "all_gather", 1252, "", 2);
    }
  }
  return run;
}

// The collectives `rank` begun in `step` (their first `n`), its last one still in flight.
void BeginStep(CannedRun& run, const CannedRun& full, int rank, int64_t step, size_t n) {
  for (const CollectiveRecord& c : full.traces[rank].collectives) {
    if (c.step != step || n == 0) continue;
    run.traces[rank].collectives.push_back(c);
    --n;
  }
  run.traces[rank].collectives.back().end_s.reset();
}

// The self-test's crash in ddp/slices=2 as the H100 run of 2026-11-26 recorded it: rank 1 is
// killed by SIGSEGV in step 3. Its slice peer, rank 0, fails in step 3's reduce_scatter on the
// lost connection and stops there with a communication-error footer; ranks 2 and 3 (the other
// slice) were faster: their reduce_scatter of step 3 completed and they had begun step 3's
// cross-slice all_reduce (cross0 with rank 0, cross1 with rank 1) when the error reached them.
CannedRun CrashOfRank1InStep3() {
  const CannedRun full = SlicedRun(5);
  CannedRun run = full;
  for (int r = 0; r < 4; ++r) run.Cut(r, 2);
  BeginStep(run, full, 0, 3, 1);  // slice0 seq 4: reduce_scatter, failed
  BeginStep(run, full, 2, 3, 2);  // slice1 seq 4 done, cross0 seq 2: all_reduce, failed
  BeginStep(run, full, 3, 3, 2);  // slice1 seq 4 done, cross1 seq 2: all_reduce, failed
  run.traces[2].collectives[run.traces[2].collectives.size() - 2].end_s = 3.66;
  run.traces[3].collectives[run.traces[3].collectives.size() - 2].end_s = 3.69;
  const char* lost[] = {"slice0: reduce_scatter", "", "cross0: all_reduce", "cross1: all_reduce"};
  run.launch.ending = LaunchEnding::kCrash;
  for (int r : {0, 2, 3}) {
    const std::string error = "communication: step 3: rank " + std::to_string(r) + " group " + lost[r] +
                              ": [gloo/transport/tcp/pair.cc:547] Connection closed by peer [127.0.0.1]:39815";
    run.traces[r].footer = TraceFooter{2, error};
    run.launch.ranks[r].exit_code = 3;
    run.launch.ranks[r].failed_after_peer = true;
    run.launch.ranks[r].note = "its collective failed after rank 1 died (" + error + ")";
  }
  run.launch.ranks[1].exit_code.reset();
  run.launch.ranks[1].signal = SIGSEGV;
  run.launch.ranks[1].note = "killed by signal 11 (Segmentation fault)";
  for (RankExit& e : run.launch.ranks) e.last_step = 2;
  return run;
}

// Rank 0 "issued only 2 in group cross0" because the launch ended under it: an echo of the crash,
// not a collective-order bug. The crash checker's finding is the only one.
TEST(CollectiveOrderCheckerTest, ARankStoppedByAPeersCrashIsNotAnOrderProblem) {
  CannedRun run = CrashOfRank1InStep3();
  EXPECT_TRUE(CollectiveOrderChecker().Check(run.Context()).empty());

  const std::vector<std::string> checks = {"replica_weights", "synced_grads", "optimizer_state", "buffers",
                                           "collective_order", "discovery_count", "finite", "hang",
                                           "crash", "startup", "config_agreement"};
  const CheckerRun checked = RunCheckers(checks, run.Context(), {});
  std::string all;
  for (const Finding& f : checked.findings) all += f.checker + ": " + f.message + "\n";
  ASSERT_EQ(checked.findings.size(), 1u) << all;
  EXPECT_EQ(checked.findings[0].checker, "crash");
  EXPECT_EQ(checked.findings[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(checked.findings[0].step, 3);

  // The traces alone (`lockstep check`: no launch report) say the same: the footers name the error.
  const LaunchReport no_launch;
  EXPECT_TRUE(CollectiveOrderChecker().Check(CheckContext{run.scenario, run.traces, no_launch}).empty());

  // Nor when the launcher killed rank 0 before it wrote a footer.
  run.traces[0].footer.reset();
  run.launch.ranks[0].exit_code.reset();
  run.launch.ranks[0].signal = SIGKILL;
  run.launch.ranks[0].failed_after_peer = false;
  run.launch.ranks[0].killed_by_launcher = true;
  EXPECT_TRUE(CollectiveOrderChecker().Check(run.Context()).empty());
}

// The same traces, but rank 0 ended its run on its own after step 2 (a clean footer) and the
// others hung in step 3 waiting for it: the ranks ran different numbers of steps.
TEST(CollectiveOrderCheckerTest, ARankThatExitedCleanlyEarlyIsStillUnevenSteps) {
  CannedRun run = CrashOfRank1InStep3();
  run.traces[0].collectives.pop_back();  // it began nothing of step 3
  run.traces[0].footer = TraceFooter{2, "ok"};
  run.launch.ending = LaunchEnding::kHang;
  for (int r : {1, 2, 3}) {
    run.traces[r].footer.reset();
    run.launch.ranks[r] = RankExit{};
    run.launch.ranks[r].rank = r;
    run.launch.ranks[r].signal = SIGKILL;
    run.launch.ranks[r].killed_by_launcher = true;
  }
  BeginStep(run, SlicedRun(5), 1, 3, 1);  // rank 1 waits in slice0 seq 4 for rank 0
  run.launch.ranks[0] = RankExit{};
  run.launch.ranks[0].exit_code = 0;
  run.launch.ranks[0].trace_finished = true;

  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 2u);  // cross0 and slice0: rank 0 left both
  const Finding* cross = f[0].details.at("group") == "cross0" ? &f[0] : &f[1];
  EXPECT_EQ(cross->details.at("group"), "cross0");
  EXPECT_EQ(cross->details.at("collective_seq"), "2");
  EXPECT_EQ(cross->step, 3);
  EXPECT_EQ(cross->ranks, (std::vector<int>{2}));
  EXPECT_NE(cross->message.find("rank 0 issued only 2 in group cross0 and exited"), std::string::npos)
      << cross->message;
  EXPECT_EQ(cross->cause.rfind("rank 0 exited after step 2 while rank 2 went on to step 3", 0), 0u) << cross->cause;
}

// A mismatch in a step before the crash is a finding whatever ended the run: rank 2 issued an
// extra cross-slice all_reduce in step 2, which rank 0 completed without it before it stopped on
// the error that echoes rank 1's death.
TEST(CollectiveOrderCheckerTest, AMismatchBeforeTheCrashStillFires) {
  CannedRun run = CrashOfRank1InStep3();
  CollectiveRecord extra;
  extra.group = "cross0";
  extra.op = "all_reduce";
  extra.dtype = "float32";
  extra.count = 1;
  extra.reduce = "sum";
  extra.step = 2;
  run.InsertCollective(2, 2, extra);  // after step 2's all_reduce (cross0 seq 1)
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].details.at("group"), "cross0");
  EXPECT_EQ(f[0].details.at("collective_seq"), "2");
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_NE(f[0].message.find("rank 2 runs an extra collective all_reduce(float32, 1, sum) at step 2; rank 0 "
                              "issued only 2 in group cross0 and went on past that step"),
            std::string::npos)
      << f[0].message;
  EXPECT_EQ(f[0].cause.rfind("rank 2 issued 1 collective the others did not, in step 2", 0), 0u) << f[0].cause;

  // And a collective that differs on both sides, in a step before the crash.
  run = CrashOfRank1InStep3();
  for (CollectiveRecord& c : run.traces[3].collectives) {
    if (c.group == "cross1" && c.seq == 1) c.count = 1300;
  }
  f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].details.at("group"), "cross1");
  EXPECT_EQ(f[0].details.at("collective_seq"), "1");
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].details.at("diff"), "count 1300 vs 1252");
}

TEST(CollectiveOrderCheckerTest, FixtureHangIsNotAnOrderProblem) {
  auto traces = ReadTraceDir(std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "fixtures/traces/hang_rank1_step3", 4);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  Scenario scenario;
  LaunchReport launch;
  EXPECT_TRUE(CollectiveOrderChecker().Check(CheckContext{scenario, *traces, launch}).empty());
}

}  // namespace
}  // namespace lockstep
