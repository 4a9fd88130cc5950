#include "harness/result/run_result.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

const Outcome kAll[] = {Outcome::kPass,  Outcome::kFail,    Outcome::kXfail,  Outcome::kXpass,
                        Outcome::kError, Outcome::kTimeout, Outcome::kSkipped};

TEST(OutcomeTest, NamesRoundTrip) {
  for (Outcome o : kAll) {
    const auto back = FromString<Outcome>(ToString(o));
    ASSERT_TRUE(back.has_value()) << ToString(o);
    EXPECT_EQ(*back, o);
  }
  EXPECT_STREQ(ToString(Outcome::kXpass), "xpass");
  EXPECT_STREQ(ToString(Outcome::kSkipped), "skipped");
}

TEST(OutcomeTest, UnknownNamesAreRejected) {
  EXPECT_FALSE(FromString<Outcome>("PASS").has_value());
  EXPECT_FALSE(FromString<Outcome>("").has_value());
  EXPECT_FALSE(FromString<Outcome>("passed").has_value());
}

TEST(OutcomeTest, FailuresFollowLit) {
  EXPECT_FALSE(IsFailure(Outcome::kPass));
  EXPECT_FALSE(IsFailure(Outcome::kXfail));  // expected failure that failed: fine
  EXPECT_FALSE(IsFailure(Outcome::kSkipped));
  EXPECT_TRUE(IsFailure(Outcome::kFail));
  EXPECT_TRUE(IsFailure(Outcome::kXpass));  // expected findings did not appear
  EXPECT_TRUE(IsFailure(Outcome::kError));
  EXPECT_TRUE(IsFailure(Outcome::kTimeout));
}

TEST(OutcomeTest, CountsEveryOutcome) {
  RunResult result;
  for (Outcome o : {Outcome::kPass, Outcome::kPass, Outcome::kFail, Outcome::kXfail, Outcome::kXpass,
                    Outcome::kError, Outcome::kTimeout, Outcome::kSkipped, Outcome::kSkipped}) {
    ScenarioResult s;
    s.outcome = o;
    result.scenarios.push_back(s);
  }
  const OutcomeCounts c = CountOutcomes(result);
  EXPECT_EQ(c.total, 9);
  EXPECT_EQ(c.passed, 2);
  EXPECT_EQ(c.failed, 1);
  EXPECT_EQ(c.xfailed, 1);
  EXPECT_EQ(c.xpassed, 1);
  EXPECT_EQ(c.errors, 1);
  EXPECT_EQ(c.timeouts, 1);
  EXPECT_EQ(c.skipped, 2);
  EXPECT_EQ(CountOutcomes(RunResult{}).total, 0);
}

TEST(FindingOutcomeTest, Names) {
  EXPECT_STREQ(ToString(FindingOutcome::kFail), "fail");
  EXPECT_STREQ(ToString(FindingOutcome::kExpected), "expected");
  EXPECT_STREQ(ToString(FindingOutcome::kError), "error");
}

}  // namespace
}  // namespace lockstep
