#include "checkers/expectation_matcher.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

Finding MakeFinding(const std::string& checker, std::optional<int64_t> step, std::vector<int> ranks,
                    const std::string& tensor = "", std::vector<std::string> tensors = {}) {
  Finding f;
  f.checker = checker;
  f.step = step;
  f.ranks = std::move(ranks);
  f.tensor = tensor;
  f.tensors = std::move(tensors);
  f.message = "m";
  return f;
}

ExpectedFinding Expect(const std::string& checker, std::optional<int64_t> step = std::nullopt,
                       std::vector<int> ranks = {}, const std::string& tensor = "") {
  ExpectedFinding e;
  e.checker = checker;
  e.step = step;
  e.ranks = std::move(ranks);
  e.tensor = tensor;
  return e;
}

TEST(ExpectationMatcherTest, MatchesOnCheckerStepRankSetAndTensorGlob) {
  const Finding f = MakeFinding("replica_weights", 3, {2, 1}, "blocks.0.attn.qkv.weight",
                                {"blocks.0.attn.qkv.weight", "blocks.1.mlp.fc1.bias"});
  EXPECT_TRUE(Matches(Expect("replica_weights"), f));
  EXPECT_TRUE(Matches(Expect("replica_weights", 3), f));
  EXPECT_TRUE(Matches(Expect("replica_weights", 3, {1, 2}), f));
  EXPECT_TRUE(Matches(Expect("replica_weights", 3, {1, 2}, "blocks.*.attn.*"), f));
  EXPECT_TRUE(Matches(Expect("replica_weights", std::nullopt, {}, "*.mlp.fc1.bias"), f));
  EXPECT_FALSE(Matches(Expect("synced_grads"), f));
  EXPECT_FALSE(Matches(Expect("replica_weights", 4), f));
  EXPECT_FALSE(Matches(Expect("replica_weights", 3, {1}), f));
  EXPECT_FALSE(Matches(Expect("replica_weights", 3, {1, 2, 3}), f));
  EXPECT_FALSE(Matches(Expect("replica_weights", 3, {}, "lm_head.*"), f));
  EXPECT_FALSE(Matches(Expect("replica_weights", 3), MakeFinding("replica_weights", std::nullopt, {2})));
  Finding error = f;
  error.outcome = FindingOutcome::kError;
  EXPECT_FALSE(Matches(Expect("replica_weights"), error));
}

// A finding without a majority names every side: an expectation of the rank at fault matches when
// that rank is among them (a 2-rank run of an injection on rank 1 names ranks 0 and 1).
TEST(ExpectationMatcherTest, ANoMajorityFindingMatchesTheRanksAmongItsSides) {
  Finding f = MakeFinding("replica_weights", 3, {0, 1});
  f.details["majority"] = "none";
  EXPECT_TRUE(Matches(Expect("replica_weights", 3, {1}), f));
  EXPECT_TRUE(Matches(Expect("replica_weights", 3, {0, 1}), f));
  EXPECT_FALSE(Matches(Expect("replica_weights", 3, {2}), f));
  f.details.erase("majority");
  EXPECT_FALSE(Matches(Expect("replica_weights", 3, {1}), f)) << "with a majority the ranks are exact";
  f.details["majority"] = "none";
  f.details["named"] = "the side that issued the extra collective";
  EXPECT_FALSE(Matches(Expect("replica_weights", 3, {1}), f)) << "a side the records named is exact too";
}

TEST(ExpectationMatcherTest, NoExpectations) {
  std::vector<Finding> none;
  EXPECT_EQ(MatchExpectations({}, none).outcome, Outcome::kPass);
  EXPECT_EQ(MatchExpectations({}, none).reason, "");

  std::vector<Finding> fail = {MakeFinding("finite", 2, {0})};
  auto v = MatchExpectations({}, fail);
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_EQ(v.reason, "findings: finite at step 2 on rank 0");
  EXPECT_EQ(fail[0].outcome, FindingOutcome::kFail);

  std::vector<Finding> error = {MakeFinding("reference", std::nullopt, {})};
  error[0].outcome = FindingOutcome::kError;
  error[0].message = "no 1-rank reference run";
  v = MatchExpectations({}, error);
  EXPECT_EQ(v.outcome, Outcome::kError);
  EXPECT_EQ(v.reason, "could not check: reference: no 1-rank reference run");
}

TEST(ExpectationMatcherTest, XfailWhenExactlyTheExpectedFindingsOccur) {
  std::vector<Finding> findings = {MakeFinding("replica_weights", 3, {1}), MakeFinding("synced_grads", 3, {1}),
                                   MakeFinding("replica_weights", 3, {1})};
  auto v = MatchExpectations({Expect("replica_weights", 3, {1}), Expect("synced_grads", 3)}, findings);
  EXPECT_EQ(v.outcome, Outcome::kXfail);
  EXPECT_EQ(v.reason, "all 2 expected findings occurred");
  for (const Finding& f : findings) EXPECT_EQ(f.outcome, FindingOutcome::kExpected);
}

TEST(ExpectationMatcherTest, XpassWhenNoExpectedFindingAppeared) {
  std::vector<Finding> none;
  ExpectedFinding e = Expect("replica_weights", 3, {1});
  e.location = SourceLocation{"scenarios/inject/skip.yaml", 12, 5};
  auto v = MatchExpectations({e}, none);
  EXPECT_EQ(v.outcome, Outcome::kXpass);
  EXPECT_EQ(v.reason,
            "expected findings did not appear: replica_weights at step 3 on rank 1 (scenarios/inject/skip.yaml:12)");
}

TEST(ExpectationMatcherTest, FailWhenSomeExpectedAreMissing) {
  std::vector<Finding> findings = {MakeFinding("replica_weights", 3, {1})};
  auto v = MatchExpectations({Expect("replica_weights", 3, {1}), Expect("synced_grads", 3, {1})}, findings);
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_EQ(v.reason, "expected but missing: synced_grads at step 3 on rank 1");
  EXPECT_EQ(findings[0].outcome, FindingOutcome::kExpected);
}

TEST(ExpectationMatcherTest, FailWhenAnUnexpectedFindingAppears) {
  std::vector<Finding> findings = {MakeFinding("replica_weights", 3, {1}), MakeFinding("finite", 5, {0, 1})};
  auto v = MatchExpectations({Expect("replica_weights", 3, {1})}, findings);
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_EQ(v.reason, "not expected: finite at step 5 on ranks 0,1");
  EXPECT_EQ(findings[0].outcome, FindingOutcome::kExpected);
  EXPECT_EQ(findings[1].outcome, FindingOutcome::kFail);
}

TEST(ExpectationMatcherTest, FoundAtTheWrongStepIsAFailNotAnXpass) {
  std::vector<Finding> findings = {MakeFinding("replica_weights", 4, {1}, "w0")};
  auto v = MatchExpectations({Expect("replica_weights", 3, {1})}, findings);
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_EQ(v.reason,
            "expected but missing: replica_weights at step 3 on rank 1; "
            "not expected: replica_weights at step 4 on rank 1 (tensor w0)");
}

TEST(ExpectationMatcherTest, ErrorWhenACheckerCouldNotJudge) {
  std::vector<Finding> findings = {MakeFinding("replica_weights", 3, {1}), MakeFinding("golden", std::nullopt, {})};
  findings[1].outcome = FindingOutcome::kError;
  findings[1].message = "no golden file";
  auto v = MatchExpectations({Expect("replica_weights", 3, {1})}, findings);
  EXPECT_EQ(v.outcome, Outcome::kError);
  EXPECT_EQ(v.reason, "could not check: golden: no golden file");
  EXPECT_EQ(findings[1].outcome, FindingOutcome::kError);
}

TEST(ExpectationMatcherTest, EachCheckersOutcomeComesFromItsOwnFindings) {
  std::vector<Finding> findings = {MakeFinding("replica_weights", 3, {1}), MakeFinding("synced_grads", 2, {1}),
                                   MakeFinding("golden", std::nullopt, {})};
  findings[2].outcome = FindingOutcome::kError;
  MatchExpectations({Expect("replica_weights", 3, {1})}, findings);
  EXPECT_EQ(CheckerOutcome("replica_weights", findings), Outcome::kXfail);
  EXPECT_EQ(CheckerOutcome("synced_grads", findings), Outcome::kFail);
  EXPECT_EQ(CheckerOutcome("golden", findings), Outcome::kError);
  EXPECT_EQ(CheckerOutcome("finite", findings), Outcome::kPass);
}

}  // namespace
}  // namespace lockstep
