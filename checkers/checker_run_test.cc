#include "checkers/checker_run.h"

#include <gtest/gtest.h>

#include "checkers/checker_registry.h"
#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

TEST(CheckerRunTest, VerdictsComeFromTheMatcherPerChecker) {
  testing::CannedRun run(3, 4);
  run.Diverge(1, TensorKind::kParam, "w0", 2);
  ExpectedFinding e;
  e.checker = "replica_weights";
  e.step = 2;
  const CheckerRun result = RunCheckers({"replica_weights", "finite", "no_such_checker"}, run.Context(), {e});
  ASSERT_EQ(result.verdicts.size(), 3u);
  EXPECT_EQ(result.verdicts[0].outcome, Outcome::kXfail);
  EXPECT_EQ(result.verdicts[1].outcome, Outcome::kPass);
  EXPECT_EQ(result.verdicts[2].checker, "no_such_checker");
  EXPECT_EQ(result.verdicts[2].outcome, Outcome::kError);
  // The unknown name's finding comes from the registry's own UnknownChecker.
  ASSERT_EQ(result.findings.back().checker, "no_such_checker");
  EXPECT_EQ(result.findings.back().message, "no checker named 'no_such_checker'");
  EXPECT_EQ(result.expectation.outcome, Outcome::kError);
}

TEST(CheckerRunTest, SkippedAndReplacedCheckersDoNotRun) {
  testing::CannedRun run(2, 3);
  run.Diverge(1, TensorKind::kParam, "w0", 1);
  Finding companion;
  companion.checker = "reference";
  companion.outcome = FindingOutcome::kError;
  companion.message = "the reference run did not complete";
  CheckerRunOptions options;
  options.skip["replica_weights"] = "not here";
  options.findings_instead["reference"] = {companion};
  const CheckerRun result = RunCheckers({"replica_weights", "reference"}, run.Context(), {}, options);
  ASSERT_EQ(result.verdicts.size(), 2u);
  EXPECT_EQ(result.verdicts[0].outcome, Outcome::kSkipped);
  EXPECT_EQ(result.verdicts[0].skip_reason, "not here");
  EXPECT_EQ(result.verdicts[1].outcome, Outcome::kError);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].message, "the reference run did not complete");
}

TEST(CheckerRunTest, OnlyCheckersThatNeedAScenarioOrALaunchSayWhy) {
  for (const std::string& name : CheckerNames()) {
    const auto checker = MakeChecker(name);
    const bool scenario_bound = name == "reference" || name == "determinism" || name == "golden";
    EXPECT_EQ(!WhyNotWithoutScenario(*checker, /*have_launch=*/true).empty(), scenario_bound) << name;
    const bool launch_bound = scenario_bound || name == "crash" || name == "hang" || name == "startup" ||
                              name == "node_lost" || name == "teardown";
    EXPECT_EQ(!WhyNotWithoutScenario(*checker, /*have_launch=*/false).empty(), launch_bound) << name;
  }
}

}  // namespace
}  // namespace lockstep
