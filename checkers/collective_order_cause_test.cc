// Each collective cause fires on the sequences of its bug and stays quiet on sequences that only
// look alike, through the collective_order checker that attaches it (as a run's report shows it)
// and as a rule alone. The canned run issues, every step s >= 1, all_reduce(float32, 64, avg) then
// all_reduce(float32, 32, avg) in world (seqs 2s-1 and 2s), after step 0's broadcast (seq 0).
#include "checkers/collective_order_cause.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "checkers/collective_order_checker.h"
#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::CannedRun;

std::string OnlyCause(const CannedRun& run) {
  const std::vector<Finding> findings = CollectiveOrderChecker().Check(run.Context());
  EXPECT_EQ(findings.size(), 1u);
  return findings.empty() ? "" : findings.front().cause;
}

CollectiveRecord Call(const std::string& op, int64_t step, int64_t count = 0, const std::string& reduce = "") {
  CollectiveRecord c;
  c.op = op;
  c.step = step;
  c.count = count;
  c.dtype = count > 0 ? "float32" : "";
  c.reduce = reduce;
  return c;
}

CollectiveRecord& WorldSeq(CannedRun& run, int rank, uint64_t seq) {
  for (CollectiveRecord& c : run.traces[rank].collectives) {
    if (c.group == "world" && c.seq == seq) return c;
  }
  ADD_FAILURE() << "rank " << rank << " has no world seq " << seq;
  return run.traces[rank].collectives.front();
}

// Rank `rank` never issued world seq `seq`: its later collectives move up by one.
void Skip(CannedRun& run, int rank, uint64_t seq) {
  std::vector<CollectiveRecord>& cs = run.traces[rank].collectives;
  for (auto it = cs.begin(); it != cs.end();) {
    if (it->seq == seq) {
      it = cs.erase(it);
      continue;
    }
    if (it->seq > seq) --it->seq;
    ++it;
  }
}

// Ends `rank`'s run cleanly after `last_step`: its records of later steps gone, its footer kept.
void EndCleanlyAfter(CannedRun& run, int rank, int64_t last_step) {
  const std::optional<TraceFooter> footer = run.traces[rank].footer;
  run.Cut(rank, last_step);
  run.traces[rank].footer = footer;
}

TEST(CollectiveOrderCauseTest, AnExtraCollectiveOnOneRankThenTheSameSequence) {
  CannedRun run(4, 4);
  run.InsertCollective(2, 5, Call("all_reduce", 2, 1, "sum"));  // a metric sync on rank 2 only
  EXPECT_EQ(OnlyCause(run),
            "rank 2 issued 1 collective the others did not, in step 2 (all_reduce(float32, 1, sum)), then went on as "
            "they did: a collective called on some ranks only (a call under a condition that differs across ranks, "
            "e.g. `if rank == 0:`)");
}

TEST(CollectiveOrderCauseTest, AnExtraCollectiveInAStepTheOthersCompletedWithoutIt) {
  CannedRun run(3, 2);
  run.InsertCollective(0, 5, Call("barrier", 2));  // after the last all_reduce; the others exited
  EXPECT_EQ(OnlyCause(run),
            "rank 0 issued 1 collective the others did not, in step 2 (barrier()), a step ranks 1,2 completed "
            "without them: a collective called on some ranks only (a call under a condition that differs across "
            "ranks, e.g. `if rank == 0:`)");
}

TEST(CollectiveOrderCauseTest, ASkippedCollectiveThenTheSameSequence) {
  CannedRun run(4, 4);
  Skip(run, 1, 5);  // rank 1 skips step 3's first all_reduce, then goes on
  EXPECT_EQ(OnlyCause(run),
            "rank 1 skipped 1 collective the others issued in step 3 (all_reduce(float32, 64, avg)), then went on as "
            "they did: a collective called on some ranks only (a call under a condition that differs across ranks, "
            "e.g. `if rank == 0:`)");
  // Every step repeats the same two calls: only the steps tell a skip from an extra call.
  EXPECT_THAT(OnlyCause(run), Not(HasSubstr("the others did not")));
}

TEST(CollectiveOrderCauseTest, ACleanExitOneCollectiveShortIsASkip) {
  CannedRun run(4, 3);
  run.traces[3].collectives.pop_back();  // exited after step 3 without its last all_reduce
  EXPECT_THAT(OnlyCause(run), HasSubstr("rank 3 skipped 1 collective the others issued in step 3 "
                                        "(all_reduce(float32, 32, avg)), a step it completed"));
}

TEST(CollectiveOrderCauseTest, AnExtraStepAfterTheOthersExitedIsUnevenInputs) {
  CannedRun run(3, 4);
  for (int r : {0, 1}) EndCleanlyAfter(run, r, 3);  // rank 2 had one more batch
  EXPECT_EQ(OnlyCause(run),
            "ranks 0,1 exited after step 3 while rank 2 went on to step 4 and issued all_reduce(float32, 64, avg): "
            "the ranks ran different numbers of steps (probably uneven inputs: a rank with more batches than the "
            "others; DistributedSampler(drop_last=True) or DDP's join() keeps them even)");
  // The same extra collectives in a step the others completed are not another step.
  CannedRun same_step(3, 2);
  same_step.InsertCollective(0, 5, Call("barrier", 2));
  EXPECT_THAT(OnlyCause(same_step), Not(HasSubstr("different numbers of steps")));
  // Nor is a rank that died: no clean exit, no order finding at all.
  CannedRun died(3, 4);
  died.Cut(0, 3);
  EXPECT_TRUE(CollectiveOrderChecker().Check(died.Context()).empty());
}

TEST(CollectiveOrderCauseTest, TheSameTwoCollectivesInAnotherOrder) {
  CannedRun run(4, 4);
  std::swap(WorldSeq(run, 1, 5).count, WorldSeq(run, 1, 6).count);  // step 3: 32 before 64 on rank 1
  EXPECT_EQ(OnlyCause(run),
            "the ranks issued the same collectives in another order at step 3 (rank 1: all_reduce(float32, 32, avg) "
            "first; ranks 0,2,3: all_reduce(float32, 64, avg) first): collectives issued in an order that differs "
            "across ranks (e.g. over a set, or parameters registered in another order)");
}

TEST(CollectiveOrderCauseTest, TheSameCollectiveWithAnotherTensor) {
  CannedRun run(4, 4);
  WorldSeq(run, 1, 5).count = 4096;
  const std::string cause = OnlyCause(run);
  EXPECT_EQ(cause,
            "the ranks call all_reduce with tensors of another size at step 3, then went on alike: the tensors they "
            "pass differ (a model, a gradient bucket layout or a precision that differs across ranks)");
  EXPECT_THAT(cause, Not(HasSubstr("another order")));

  CannedRun dtype(4, 4);
  WorldSeq(dtype, 1, 5).dtype = "bfloat16";
  EXPECT_THAT(OnlyCause(dtype), HasSubstr("with tensors of another dtype at step 3, then went on alike"));

  CannedRun reduce(4, 4);
  WorldSeq(reduce, 1, 5).reduce = "sum";
  EXPECT_EQ(OnlyCause(reduce),
            "the ranks call all_reduce with another reduce op at step 3, then went on alike: an argument computed "
            "differently on some ranks");
}

// Lightning#19045: rank 0's log sync (a barrier) meets the others' gradient all_reduce, and every
// rank hangs there: the traces stop at the difference.
TEST(CollectiveOrderCauseTest, DifferentCollectivesAndNothingAfterAreDifferentCodePaths) {
  CannedRun run(3, 3);
  for (int r = 0; r < 3; ++r) run.Cut(r, 3);
  for (int r = 0; r < 3; ++r) {
    std::vector<CollectiveRecord>& cs = run.traces[r].collectives;
    while (cs.back().seq > 5) cs.pop_back();  // every rank is stuck in its seq 5
  }
  CollectiveRecord barrier = Call("barrier", 3);
  barrier.group = "world";
  barrier.seq = 5;
  WorldSeq(run, 0, 5) = barrier;
  EXPECT_EQ(OnlyCause(run),
            "the ranks took different code paths at step 3: a collective called on some ranks only (e.g. a metric sync "
            "or a log under `if rank == 0:`) or the same collectives in another order; the traces stop there (the "
            "job hung or died), before saying which");
  // Same op, sequences that go on alike: not a different code path but another argument.
  CannedRun same_op(4, 4);
  WorldSeq(same_op, 1, 5).count = 4096;
  EXPECT_THAT(OnlyCause(same_op), Not(HasSubstr("code paths")));
}

// examples/rank0_metric_allreduce.py: rank 0's metric all_reduce(1) meets the others' gradient
// all_reduce, and gloo aborts: the same op with another count, and nothing after it. That is
// not "the same call with another tensor" until the sequences show it.
TEST(CollectiveOrderCauseTest, TheSameOpWithAnotherCountAndNothingAfterIsEitherWay) {
  CannedRun run(3, 3);
  for (int r = 0; r < 3; ++r) run.Cut(r, 3);
  for (int r = 0; r < 3; ++r) {
    std::vector<CollectiveRecord>& cs = run.traces[r].collectives;
    while (cs.back().seq > 5) cs.pop_back();
  }
  WorldSeq(run, 0, 5).count = 1;
  WorldSeq(run, 0, 5).reduce = "sum";
  const std::string cause = OnlyCause(run);
  EXPECT_EQ(cause,
            "the ranks call all_reduce with other arguments at step 3: a collective called on some ranks only (e.g. a "
            "metric all-reduce under `if rank == 0:`) meeting another, or the same call with tensors that differ "
            "across ranks; the traces stop there (the job hung or died), before saying which");
  EXPECT_THAT(cause, Not(HasSubstr("went on alike")));
}

TEST(CollectiveOrderCauseTest, EachRuleAloneStaysQuietWithoutADifference) {
  std::set<std::string_view> names;
  const CollectiveRecord a = Call("all_reduce", 1, 64, "avg");
  CollectiveMismatchFacts same;
  same.reference.ranks = {0, 1};
  same.odd.ranks = {2};
  same.reference.from_seq = {&a};
  same.odd.from_seq = {&a};
  for (const CollectiveMismatchCause& c : CollectiveMismatchCauses()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_EQ(c.explain(CollectiveMismatchFacts{}), std::nullopt) << c.name << " fires on no sequences at all";
    EXPECT_EQ(c.explain(same), std::nullopt) << c.name << " fires on the same collective";
  }
  EXPECT_EQ(names.size(), 6u);
}

}  // namespace
}  // namespace lockstep
