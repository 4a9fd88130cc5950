#include "harness/selftest/detection_table.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

Scenario InjectedScenario() {
  Scenario s;
  s.name = "inject/ddp/skip_grad_allreduce";
  Injection inj;
  inj.kind = "skip_grad_allreduce";
  inj.ranks = {1};
  inj.step = 3;
  s.inject = {inj};
  ExpectedFinding e;
  e.checker = "synced_grads";
  e.step = 3;
  e.ranks = {1};
  s.expect_fail = {e};
  return s;
}

Finding MakeFinding(const std::string& checker, int64_t step, std::vector<int> ranks, FindingOutcome outcome) {
  Finding f;
  f.checker = checker;
  f.step = step;
  f.ranks = std::move(ranks);
  f.outcome = outcome;
  f.tensor = "layers.0.weight";
  return f;
}

TEST(DetectionTableTest, CaughtAtOnsetOnTheRightRank) {
  ScenarioResult r;
  r.mode = "ddp";
  r.outcome = Outcome::kXfail;
  r.findings = {MakeFinding("synced_grads", 3, {1}, FindingOutcome::kExpected)};
  DetectionRow row = EvaluateDetection(InjectedScenario(), r);
  EXPECT_TRUE(row.ok()) << row.note;
  EXPECT_EQ(row.latency(), 0);
  EXPECT_FALSE(row.right_tensor.has_value());
}

TEST(DetectionTableTest, LateDetectionIsNotOk) {
  ScenarioResult r;
  r.outcome = Outcome::kFail;
  r.findings = {MakeFinding("synced_grads", 5, {1}, FindingOutcome::kFail)};
  DetectionRow row = EvaluateDetection(InjectedScenario(), r);
  EXPECT_TRUE(row.caught);
  EXPECT_FALSE(row.at_onset);
  EXPECT_EQ(row.latency(), 2);
  EXPECT_FALSE(row.ok());
  EXPECT_NE(row.note.find("step 5"), std::string::npos);
}

TEST(DetectionTableTest, MissedWhenOnlyOtherRanksOrCheckersFire) {
  ScenarioResult r;
  r.outcome = Outcome::kFail;
  r.findings = {MakeFinding("synced_grads", 3, {2}, FindingOutcome::kFail),
                MakeFinding("finite", 3, {1}, FindingOutcome::kFail)};
  DetectionRow row = EvaluateDetection(InjectedScenario(), r);
  EXPECT_FALSE(row.caught);
  EXPECT_FALSE(row.ok());
}

TEST(DetectionTableTest, WrongTensorIsNotOk) {
  Scenario s = InjectedScenario();
  s.inject[0].tensor = "head.*";
  ScenarioResult r;
  r.outcome = Outcome::kXfail;
  r.findings = {MakeFinding("synced_grads", 3, {1}, FindingOutcome::kExpected)};
  DetectionRow row = EvaluateDetection(s, r);
  ASSERT_TRUE(row.right_tensor.has_value());
  EXPECT_FALSE(*row.right_tensor);
  EXPECT_FALSE(row.ok());
}

TEST(DetectionTableTest, TableCountsCatchesAndFalsePositives) {
  ScenarioResult r;
  r.mode = "ddp";
  r.outcome = Outcome::kXfail;
  r.findings = {MakeFinding("synced_grads", 3, {1}, FindingOutcome::kExpected)};
  FalsePositiveCount fp;
  fp.runs = 10;
  fp.false_positives = 1;
  fp.offenders = {"clean/ddp_mlp (repeat 2): fail: replica_weights"};
  std::string table = RenderDetectionTable({EvaluateDetection(InjectedScenario(), r)}, fp, 5);
  EXPECT_NE(table.find("| skip_grad_allreduce | ddp | yes | 3 | 3 | yes | yes | n/a | 0 | xfail |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("1 of 1 injections caught"), std::string::npos);
  EXPECT_NE(table.find("False positives: 1 in 10 clean runs"), std::string::npos);
}

}  // namespace
}  // namespace lockstep
