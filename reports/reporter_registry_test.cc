#include "reports/reporter_registry.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reports/golden_file_testutil.h"
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

TEST(ReporterRegistryTest, UnwritablePathIsAnIoError) {
  Status s = WriteFileAtomically("/nonexistent-dir/report.json", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent-dir/report.json.tmp"));
}

}  // namespace
}  // namespace lockstep
