#include "reports/markdown_reporter.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reports/golden_file_testutil.h"

namespace lockstep {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Render(const RunResult& result, size_t max_bytes = kMarkdownMaxBytes) {
  std::ostringstream out;
  Status status = MarkdownReporter(max_bytes).Render(result, out);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out.str();
}

// Every table row must be whole: a cut row would merge into the note below it.
void ExpectWholeRows(const std::string& md) {
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] == '|') {
      EXPECT_THAT(line, EndsWith("|")) << line;
    }
  }
}

RunResult ManyFailures(int scenarios, size_t message_bytes) {
  RunResult r;
  for (int i = 0; i < scenarios; ++i) {
    ScenarioResult s;
    s.id = "scenario_" + std::to_string(i);
    s.file = "scenarios/many/" + s.id + ".yaml";
    s.outcome = Outcome::kFail;
    s.ranks = 4;
    s.steps = 10;
    for (int k = 0; k < 3; ++k) {
      Finding f;
      f.checker = "replica_weights";
      f.step = k;
      f.tensor = "blocks." + std::to_string(k) + ".weight";
      f.ranks = {1};
      f.message = std::string(message_bytes, 'm');
      s.findings.push_back(f);
    }
    r.scenarios.push_back(s);
  }
  return r;
}

TEST(MarkdownReporterTest, GoldenClean) {
  testing::ExpectMatchesGolden(Render(testing::LoadFixture("clean")), "clean.md");
}
TEST(MarkdownReporterTest, GoldenMixed) {
  testing::ExpectMatchesGolden(Render(testing::LoadFixture("mixed")), "mixed.md");
}
TEST(MarkdownReporterTest, GoldenHostile) {
  testing::ExpectMatchesGolden(Render(testing::LoadFixture("hostile")), "hostile.md");
}

TEST(MarkdownReporterTest, SummaryThenFailingScenarios) {
  const std::string md = Render(testing::LoadFixture("mixed"));
  EXPECT_THAT(md, HasSubstr("## lockstep: 1 passed, 4 failed, 1 error, 1 xfail, 1 skipped\n"));
  EXPECT_THAT(md, HasSubstr("| ddp_grad_not_reduced | FAIL | 4 | 5 | 5.50 s | synced_grads step 3 tensor fc1.weight "
                            "(grad) ranks [1]: gradients after sync differ: rank 1 holds its local gradient<br>cause: "
                            "rank 1's gradients are 4x the others' (every divergent gradient at step 3): a sum not "
                            "divided by the world size (4) |\n"));
  // The finding's row carries its cause under the message; a finding without one has none.
  EXPECT_THAT(md, HasSubstr("| synced_grads | fail | 3 | fc1.weight (grad) | [1] | gradients after sync differ: rank 1 "
                            "holds its local gradient<br>**cause: rank 1's gradients are 4x the others'"));
  EXPECT_THAT(md, HasSubstr("| finite | fail | 2 |  | [0, 1] | loss is not finite at step 2 on ranks [0, 1] |\n"));
  EXPECT_THAT(md, HasSubstr("| inject_skip_grad_allreduce | xfail |"));
  EXPECT_THAT(md, HasSubstr("### FAIL: ddp_grad_not_reduced\n"));
  EXPECT_THAT(md, HasSubstr("| replica_weights | fail | 3 | fc1.weight | [1] | weights diverge after step 3"));
  EXPECT_THAT(md, HasSubstr("### XPASS: inject_bitflip_missed\n"));
  EXPECT_THAT(md, HasSubstr("### TIMEOUT: ddp_hang\n"));
  EXPECT_THAT(md, Not(HasSubstr("### xfail")));  // only failing scenarios get a section
  EXPECT_THAT(md, Not(HasSubstr("Truncated")));
  ExpectWholeRows(md);
}

TEST(MarkdownReporterTest, CellsCannotBreakTheTable) {
  const std::string md = Render(testing::LoadFixture("hostile"));
  EXPECT_THAT(md, HasSubstr("| pipe\\|and<br>newline | xfail |"));
  EXPECT_THAT(md, HasSubstr("&lt;/script&gt;&lt;!--&lt;script&gt;"));
  ExpectWholeRows(md);
}

TEST(MarkdownReporterTest, StaysUnderOneMebibyteWithANote) {
  const RunResult big = ManyFailures(2000, 900);  // about 7 MB of findings
  const std::string md = Render(big);
  EXPECT_LT(md.size(), size_t{1024 * 1024});
  EXPECT_GT(md.size(), size_t{1000 * 1000});  // the cap is used, not wasted
  EXPECT_THAT(md, HasSubstr("> **Truncated:** this summary is capped at 1048575 bytes"));
  EXPECT_THAT(md, EndsWith("report.json has the complete results.\n"));
  // All 2000 summary rows fit; the cut falls in the failing-scenario sections.
  EXPECT_THAT(md, HasSubstr("| scenario_1999 | FAIL |"));
  ExpectWholeRows(md);
}

TEST(MarkdownReporterTest, SmallCapCountsWhatIsLeftOut) {
  const std::string md = Render(ManyFailures(100, 50), 4096);
  EXPECT_LE(md.size(), 4096u);
  EXPECT_THAT(md, HasSubstr("summary rows and 100 failing-scenario sections are not shown"));
  ExpectWholeRows(md);
}

TEST(MarkdownReporterTest, LongCellsAreShortened) {
  const std::string md = Render(ManyFailures(1, 5000));
  EXPECT_THAT(md, HasSubstr("mmm... |"));
  EXPECT_THAT(md, Not(HasSubstr(std::string(1001, 'm'))));
}

TEST(MarkdownReporterTest, ManyFindingsAreCounted) {
  RunResult r = ManyFailures(1, 10);
  r.scenarios[0].findings.resize(kMarkdownMaxFindingsPerScenario + 7, r.scenarios[0].findings[0]);
  EXPECT_THAT(Render(r), HasSubstr("| ... | | | | | 7 more findings in report.json |\n"));
}

}  // namespace
}  // namespace lockstep
