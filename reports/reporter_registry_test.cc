#include "reports/reporter_registry.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reports/console_reporter.h"
#include "reports/github_annotations.h"
#include "reports/golden_file_testutil.h"
#include "reports/report_text.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

class FailingReporter : public Reporter {
 public:
  std::string name() const override { return "failing"; }
  Status Render(const RunResult&, std::ostream& out) const override {
    out << "half a report";
    return InternalError("render broke half-way");
  }
};

TEST(ReporterRegistryTest, KnowsEveryFormat) {
  EXPECT_THAT(ReporterNames(), IsSupersetOf({"json", "junit", "markdown", "html"}));
  for (const std::string& name : ReporterNames()) {
    Result<std::unique_ptr<Reporter>> r = MakeReporter(name);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)->name(), name);
  }
}

// The CLI's --junit/--markdown/--html come from here; json has no flag (report.json is always written).
TEST(ReporterRegistryTest, EveryFileFormatButJsonHasAFlag) {
  std::vector<std::string> formats;
  for (const ReportFlag& flag : ReportFileFlags()) {
    formats.push_back(flag.format);
    EXPECT_FALSE(flag.help.empty()) << flag.format;
    EXPECT_TRUE(MakeReporter(flag.format).ok()) << flag.format;
  }
  std::vector<std::string> expected = ReporterNames();
  expected.erase(std::find(expected.begin(), expected.end(), "json"));
  EXPECT_EQ(formats, expected);
}

TEST(ReporterRegistryTest, UnknownFormatListsTheKnownOnes) {
  Result<std::unique_ptr<Reporter>> r = MakeReporter("xml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  std::string known;
  for (const std::string& name : ReporterNames()) known += (known.empty() ? "" : ", ") + name;
  EXPECT_THAT(r.status().message(), HasSubstr("unknown report format \"xml\" (known: " + known + ")"));
  EXPECT_THAT(known, HasSubstr("json, junit, markdown, html"));
}

TEST(ReporterRegistryTest, WritesAtomically) {
  const testing::TempDir temp("lockstep_reporter_registry_");
  const std::string path = (temp / "report.txt").string();
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  EXPECT_EQ(testing::ReadFileOrEmpty(path), "first");
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  EXPECT_EQ(testing::ReadFileOrEmpty(path), "second");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(ReporterRegistryTest, FailedRenderKeepsTheOldReport) {
  const testing::TempDir temp("lockstep_reporter_registry_");
  const std::string path = (temp / "kept.txt").string();
  ASSERT_TRUE(WriteFileAtomically(path, "the previous report").ok());
  Status s = RenderToFile(FailingReporter(), RunResult{}, path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("render broke half-way"));
  EXPECT_EQ(testing::ReadFileOrEmpty(path), "the previous report");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(ReporterRegistryTest, RenderToFileWritesEachFormat) {
  const RunResult result = testing::LoadFixture("mixed");
  for (const std::string& name : ReporterNames()) {
    auto reporter = MakeReporter(name);
    ASSERT_TRUE(reporter.ok());
    const testing::TempDir temp("lockstep_reporter_registry_");
    const std::string path = (temp / ("mixed." + name)).string();
    ASSERT_TRUE(RenderToFile(**reporter, result, path).ok()) << name;
    std::ostringstream expected;
    ASSERT_TRUE((*reporter)->Render(result, expected).ok());
    EXPECT_EQ(testing::ReadFileOrEmpty(path), expected.str()) << name;
  }
}

// A finding that names every side because no majority decided (2 ranks, an edit on rank 0) says
// so wherever its ranks appear: the console, JUnit, Markdown, annotations and HTML alike, so that
// "ranks [0, 1]" never reads as two culprits (nor, before, "ranks [1]" as the one).
TEST(ReporterRegistryTest, EveryFormatSaysWhenNoMajorityDecidedTheRanks) {
  RunResult result = testing::LoadFixture("mixed");
  // The finding each format leads with: the first failing scenario's key finding.
  Finding* f = nullptr;
  for (ScenarioResult& s : result.scenarios) {
    if (f != nullptr || !IsFailure(s.outcome)) continue;
    for (Finding& x : s.findings) {
      if (f == nullptr && &x == KeyFinding(s)) f = &x;
    }
  }
  ASSERT_NE(f, nullptr);
  f->ranks = {0, 1};
  f->details["majority"] = "none";
  const std::string said = "ranks [0, 1] (no majority: every side named)";
  for (const std::string& name : ReporterNames()) {
    auto reporter = MakeReporter(name);
    ASSERT_TRUE(reporter.ok());
    std::ostringstream out;
    ASSERT_TRUE((*reporter)->Render(result, out).ok()) << name;
    if (name == "json") {
      EXPECT_THAT(out.str(), HasSubstr("\"majority\": \"none\"")) << name;
    } else if (name == "html" || name == "markdown") {
      EXPECT_THAT(out.str(), HasSubstr("[0, 1] (no majority: every side named)")) << name;
    } else {
      EXPECT_THAT(out.str(), HasSubstr(said)) << name;
    }
  }
  std::ostringstream console_out;
  ConsoleReporter console(console_out, /*interactive=*/false, [] { return 0.0; });
  for (const ScenarioResult& s : result.scenarios) console.OnScenarioEnd(s);  // the live lines
  EXPECT_THAT(console_out.str(), HasSubstr(said));
  std::string annotations;
  for (const std::string& line : GithubAnnotations(result)) annotations += line + "\n";
  EXPECT_THAT(annotations, HasSubstr(said));

  f->details["named"] = "the side that issued the extra collective";
  f->ranks = {1};
  std::ostringstream md;
  ASSERT_TRUE((*MakeReporter("markdown"))->Render(result, md).ok());
  EXPECT_THAT(md.str(), HasSubstr("[1] (no majority: the side that issued the extra collective)"));
}

TEST(ReporterRegistryTest, UnwritablePathIsAnIoError) {
  Status s = WriteFileAtomically("/nonexistent-dir/report.json", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent-dir/report.json.tmp"));
}

}  // namespace
}  // namespace lockstep
