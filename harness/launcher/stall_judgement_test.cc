#include "harness/launcher/stall_judgement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

RankActivity Waiting() { return {false, true, 0.0}; }
RankActivity Idle() { return {false, false, 0.0}; }
RankActivity Working() { return {false, false, 0.9}; }
RankActivity Unseen() { return {false, false, std::nullopt}; }
RankActivity Finished() { return {true, false, 0.0}; }

TEST(StallJudgementTest, NothingBeforeHangTimeout) {
  EXPECT_EQ(JudgeStall({Waiting(), Idle()}, 29, 30, 1800).kind, StallKind::kNone);
}

TEST(StallJudgementTest, ARankWaitingForAnIdlePeerIsAHang) {
  const StallVerdict v = JudgeStall({Waiting(), Idle()}, 31, 30, 1800);
  EXPECT_EQ(v.kind, StallKind::kWaiting);
  EXPECT_THAT(v.waiting, ElementsAre(0));
  EXPECT_THAT(v.idle, ElementsAre(1));
}

TEST(StallJudgementTest, EveryRankInsideACollectiveIsAHangWhateverTheirCpu) {
  // NCCL's waits spin: a rank inside a collective proves nothing by using CPU.
  RankActivity spinning = Waiting();
  spinning.cpu_share = 1.0;
  EXPECT_EQ(JudgeStall({spinning, Waiting()}, 31, 30, 1800).kind, StallKind::kWaiting);
}

TEST(StallJudgementTest, RanksThatNeitherRecordNorComputeAreAHang) {
  EXPECT_EQ(JudgeStall({Idle(), Idle()}, 31, 30, 1800).kind, StallKind::kWaiting);
}

TEST(StallJudgementTest, ARankComputingOutsideCollectivesIsAQuietPhaseNotAHang) {
  // Rank 0 evaluates, rank 1 waits for it in the next collective: no hang until quiet_timeout_s.
  const StallVerdict v = JudgeStall({Working(), Waiting()}, 600, 30, 1800);
  EXPECT_EQ(v.kind, StallKind::kNone);
  EXPECT_THAT(v.working, ElementsAre(0));
  EXPECT_EQ(JudgeStall({Working(), Working()}, 600, 30, 1800).kind, StallKind::kNone);
}

TEST(StallJudgementTest, AQuietPhasePastQuietTimeoutIsAHang) {
  const StallVerdict v = JudgeStall({Working(), Idle()}, 1801, 30, 1800);
  EXPECT_EQ(v.kind, StallKind::kQuietTooLong);
  EXPECT_THAT(v.working, ElementsAre(0));
  EXPECT_THAT(v.idle, ElementsAre(1));
}

TEST(StallJudgementTest, ARankWhoseCpuCannotBeSeenMayBeWorking) {
  // On another host: judged as a quiet phase, never a hang on the short limit.
  const StallVerdict v = JudgeStall({Waiting(), Unseen()}, 600, 30, 1800);
  EXPECT_EQ(v.kind, StallKind::kNone);
  EXPECT_THAT(v.unseen, ElementsAre(1));
  EXPECT_EQ(JudgeStall({Waiting(), Unseen()}, 1801, 30, 1800).kind, StallKind::kQuietTooLong);
}

TEST(StallJudgementTest, FinishedRanksAreNotJudged) {
  const StallVerdict v = JudgeStall({Finished(), Waiting()}, 31, 30, 1800);
  EXPECT_EQ(v.kind, StallKind::kWaiting);
  EXPECT_THAT(v.idle, IsEmpty());
  EXPECT_THAT(v.waiting, ElementsAre(1));
}

TEST(StallJudgementTest, TheShareThresholdSeparatesIdleFromWorking) {
  RankActivity a = Idle();
  a.cpu_share = kBusyCpuShare;
  EXPECT_EQ(JudgeStall({a, Waiting()}, 31, 30, 1800).kind, StallKind::kNone);
  a.cpu_share = kBusyCpuShare / 2;
  EXPECT_EQ(JudgeStall({a, Waiting()}, 31, 30, 1800).kind, StallKind::kWaiting);
}

TEST(StallJudgementTest, ATimeoutOfZeroIsOff) {
  EXPECT_EQ(JudgeStall({Waiting(), Idle()}, 1e6, 0, 0).kind, StallKind::kNone);
  EXPECT_EQ(JudgeStall({Working()}, 1e6, 30, 0).kind, StallKind::kNone);
}

TEST(StallJudgementTest, BusyRanksAreTheWorkingAndTheUnseenInOrder) {
  const StallVerdict v = JudgeStall({Unseen(), Waiting(), Working(), Idle(), Working()}, 31, 30, 1800);
  EXPECT_THAT(BusyRanks(v), ElementsAre(0, 2, 4));
  EXPECT_THAT(BusyRanks(JudgeStall({Waiting(), Idle()}, 31, 30, 1800)), IsEmpty());
}

}  // namespace
}  // namespace lockstep
