#include "checkers/in_band_comparison.h"

#include <gtest/gtest.h>

#include "checkers/checker_registry.h"
#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

// The post-run findings of the replica checkers on the whole run.
std::vector<Finding> PostRun(const CannedRun& run) {
  std::vector<Finding> out;
  for (const std::string& name : InBandCheckers()) {
    for (Finding& f : MakeChecker(name)->Check(run.Context())) out.push_back(std::move(f));
  }
  return out;
}

// What the ranks judge in-band at `step`: every rank's record of that step only.
std::vector<Finding> InBand(const CannedRun& run, int64_t step) {
  std::vector<StepRecord> by_rank;
  for (const RankTrace& t : run.traces) {
    for (const StepRecord& s : t.steps) {
      if (s.step == step) by_rank.push_back(s);
    }
  }
  return JudgeStepInBand(run.scenario, by_rank);
}

void ExpectSame(const std::vector<Finding>& a, const std::vector<Finding>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].checker, b[i].checker);
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].tensors, b[i].tensors);
    EXPECT_EQ(a[i].ranks, b[i].ranks);
    EXPECT_EQ(a[i].message, b[i].message);
    EXPECT_EQ(a[i].details, b[i].details);
  }
}

TEST(InBandComparisonTest, EveryInBandCheckerIsInTheRegistry) {
  for (const std::string& name : InBandCheckers()) EXPECT_NE(MakeChecker(name), nullptr) << name;
}

// --fail-fast ends every trace at the first divergent step: there the one-step judgement and
// the whole-run analysis must say the same, word for word.
TEST(InBandComparisonTest, OneStepJudgementEqualsThePostRunFindingsOfTracesThatEndThere) {
  for (int ranks : {2, 4}) {
    CannedRun run(ranks, 3);
    run.Diverge(1, TensorKind::kParam, "w1", 3);
    run.Diverge(1, TensorKind::kGrad, "w1", 3, 0.5);
    run.Diverge(ranks - 1, TensorKind::kBuffer, "bn.running_mean", 3);
    const std::vector<Finding> in_band = InBand(run, 3);
    ASSERT_EQ(in_band.size(), 3u) << ranks;
    ExpectSame(in_band, PostRun(run));
    EXPECT_EQ(InBandDisagreement(in_band, PostRun(run), InBandCheckers()), "");
  }
}

TEST(InBandComparisonTest, StepZeroKeepsItsWording) {
  CannedRun run(3, 0);
  run.Diverge(2, TensorKind::kParam, "w0", 0);
  ExpectSame(InBand(run, 0), PostRun(run));
}

TEST(InBandComparisonTest, FindingLineRoundTrips) {
  Finding f;
  f.checker = "replica_weights";
  f.step = 3;
  f.tensor = "w \"1\"";
  f.tensors = {"w \"1\"", "w2"};
  f.ranks = {1, 3};
  f.message = "parameters diverge at step 3: \xff bytes";
  f.details = {{"max_rel_diff", "0.5"}};
  const std::string line = InBandFindingLine(f);
  EXPECT_EQ(line.rfind("in-band finding: {", 0), 0u) << line;
  std::optional<Finding> back = ParseInBandFindingLine(line);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->checker, f.checker);
  EXPECT_EQ(back->step, f.step);
  EXPECT_EQ(back->tensors, f.tensors);
  EXPECT_EQ(back->ranks, f.ranks);
  EXPECT_EQ(back->details, f.details);
  EXPECT_FALSE(ParseInBandFindingLine("some other log line").has_value());
  EXPECT_FALSE(ParseInBandFindingLine("in-band finding: {not json").has_value());
  EXPECT_FALSE(ParseInBandFindingLine("in-band finding: {\"checker\":\"x\",\"step\":\"three\"}").has_value());
}

TEST(InBandComparisonTest, InBandFindingsAreReadFromTheLogTail) {
  RankTrace t;
  Finding f;
  f.checker = "synced_grads";
  f.step = 2;
  t.log_tail = {"hello", InBandFindingLine(f)};
  std::vector<Finding> found = InBandFindings(t);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].checker, "synced_grads");
}

TEST(InBandComparisonTest, DisagreementNamesBothSides) {
  CannedRun run(4, 2);
  run.Diverge(1, TensorKind::kParam, "w0", 2);
  std::vector<Finding> in_band = InBand(run, 2);
  std::vector<Finding> post_run = PostRun(run);
  ASSERT_EQ(in_band.size(), 1u);
  EXPECT_EQ(InBandDisagreement(in_band, post_run, InBandCheckers()), "");
  // The expectation matcher may turn a finding into an expected one: that is no disagreement.
  post_run[0].outcome = FindingOutcome::kExpected;
  EXPECT_EQ(InBandDisagreement(in_band, post_run, InBandCheckers()), "");

  std::vector<Finding> other = post_run;
  other[0].ranks = {2};
  const std::string text = InBandDisagreement(in_band, other, InBandCheckers());
  EXPECT_NE(text.find("in-band found replica_weights at step 2"), std::string::npos) << text;
  EXPECT_NE(text.find("post-run found replica_weights at step 2"), std::string::npos) << text;

  EXPECT_NE(InBandDisagreement(in_band, {}, InBandCheckers()).find("post-run found nothing"), std::string::npos);
  // A checker that did not run post-run is held against nothing.
  EXPECT_EQ(InBandDisagreement(in_band, {}, {"synced_grads"}), "");
  // A post-run replica finding at the stop step that in-band missed.
  Finding grads = post_run[0];
  grads.checker = "synced_grads";
  post_run.push_back(grads);
  EXPECT_NE(InBandDisagreement(in_band, post_run, InBandCheckers()).find("in-band found nothing for synced_grads"),
            std::string::npos);
}


// Step records with replica groups (a sharded program's) are judged within their groups in-band
// as post-run: HSDP's replicas {0, 2} and {1, 3} hold different shards, and rank 3 leaves its group.
// Two replicas have no majority, so the finding names both sides of {1, 3} (never rank 1 or 3 alone).
TEST(InBandComparisonTest, ReplicaGroupsAreJudgedAsPostRun) {
  CannedRun run(4, 2);
  auto a = std::make_shared<const ReplicaGroup>(ReplicaGroup{{0, 2}, "mesh dim replicate"});
  auto b = std::make_shared<const ReplicaGroup>(ReplicaGroup{{1, 3}, "mesh dim replicate"});
  for (int r = 0; r < 4; ++r) {
    for (StepRecord& s : run.traces[r].steps) {
      for (TensorRecord& t : s.tensors) {
        if (t.kind != TensorKind::kParam || t.name != "w0") continue;
        t.group = r % 2 == 0 ? a : b;
        t.digest = testing::FakeDigest((r % 2 == 0 ? "a/" : "b/") + std::to_string(s.step));
      }
    }
  }
  EXPECT_TRUE(InBand(run, 1).empty());
  run.Tensor(3, 2, TensorKind::kParam, "w0").digest = testing::FakeDigest("rank 3 alone");
  const std::vector<Finding> live = InBand(run, 2);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].ranks, (std::vector<int>{1, 3}));
  EXPECT_NE(live[0].message.find("replica group {1, 3} on mesh dim replicate"), std::string::npos) << live[0].message;
  ExpectSame(live, PostRun(run));
}

}  // namespace
}  // namespace lockstep
