#include "reports/github_annotations.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reports/golden_file_testutil.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::StartsWith;

// The cases of @actions/core's command tests (toolkit packages/core/__tests__/command.test.ts).
TEST(GithubAnnotationsTest, EscapesDataLikeTheToolkit) {
  EXPECT_EQ(EscapeAnnotationData("plain"), "plain");
  EXPECT_EQ(EscapeAnnotationData("percent % percent % cr \r cr \r lf \n lf \n"),
            "percent %25 percent %25 cr %0D cr %0D lf %0A lf %0A");
  EXPECT_EQ(EscapeAnnotationData("%25 stays literal"), "%2525 stays literal");
  EXPECT_EQ(EscapeAnnotationData("colon: comma, kept in data"), "colon: comma, kept in data");
}

TEST(GithubAnnotationsTest, EscapesPropertiesLikeTheToolkit) {
  EXPECT_EQ(EscapeAnnotationProperty("percent % percent % cr \r cr \r lf \n lf \n colon : colon : comma , comma ,"),
            "percent %25 percent %25 cr %0D cr %0D lf %0A lf %0A colon %3A colon %3A comma %2C comma %2C");
  EXPECT_EQ(EscapeAnnotationProperty("%3A"), "%253A");  // % first, so escapes are not escaped twice
}

TEST(GithubAnnotationsTest, FirstFailingFindingOfEachFailingScenario) {
  const std::vector<std::string> lines = GithubAnnotations(testing::LoadFixture("mixed"));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0],
            "::error file=scenarios/bugs/ddp_grad_not_reduced.yaml,line=3,title=lockstep FAIL%3A ddp_grad_not_reduced"
            "::synced_grads step 3 tensor fc1.weight (grad) ranks [1]: gradients after sync differ: rank 1 holds its "
            "local gradient%0Acause: rank 1's gradients are 4x the others' (every divergent gradient at step 3): a sum "
            "not divided by the world size (4)");
  EXPECT_EQ(lines[1],
            "::error file=scenarios/inject/bitflip.yaml,line=1,title=lockstep XPASS%3A inject_bitflip_missed"
            "::expected replica_weights at step 2 on ranks [1], but no such finding appeared");
  EXPECT_THAT(lines[4], StartsWith("::error file=scenarios/inject/hang_unexpected.yaml,line=2,title=lockstep "
                                   "TIMEOUT%3A ddp_hang::hang step 4 ranks [2]: rank 2 never reached"));
}

TEST(GithubAnnotationsTest, AtMostTen) {
  RunResult r;
  for (int i = 0; i < 15; ++i) {
    ScenarioResult s;
    s.id = "s" + std::to_string(i);
    s.file = "f.yaml";
    s.outcome = i == 0 ? Outcome::kPass : Outcome::kError;
    s.reason = "broken " + std::to_string(i);
    r.scenarios.push_back(s);
  }
  const std::vector<std::string> lines = GithubAnnotations(r);
  ASSERT_EQ(lines.size(), kMaxGithubAnnotations);
  EXPECT_EQ(lines.front(), "::error file=f.yaml,line=1,title=lockstep ERROR%3A s1::broken 1");
  EXPECT_EQ(lines.back(), "::error file=f.yaml,line=1,title=lockstep ERROR%3A s10::broken 10");
  EXPECT_THAT(GithubAnnotations(r, 2), ElementsAre(lines[0], lines[1]));
}

TEST(GithubAnnotationsTest, NothingForAPassingRun) {
  std::ostringstream out;
  WriteGithubAnnotations(testing::LoadFixture("clean"), out);
  EXPECT_EQ(out.str(), "");
}

TEST(GithubAnnotationsTest, GoldenHostile) {
  std::ostringstream out;
  WriteGithubAnnotations(testing::LoadFixture("hostile"), out);
  // Every command stays on its own line whatever the names contain.
  std::istringstream lines(out.str());
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) EXPECT_THAT(line, StartsWith("::error file="));
  EXPECT_EQ(count, 4);
  testing::ExpectMatchesGolden(out.str(), "hostile.annotations.txt");
}

TEST(GithubAnnotationsTest, GoldenMixed) {
  std::ostringstream out;
  WriteGithubAnnotations(testing::LoadFixture("mixed"), out);
  testing::ExpectMatchesGolden(out.str(), "mixed.annotations.txt");
}

}  // namespace
}  // namespace lockstep
