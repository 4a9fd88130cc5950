#include "reports/json_reporter.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/core/testing/build_paths.h"
#include "harness/result/run_result_json.h"
#include "reports/golden_file_testutil.h"

namespace lockstep {
namespace {

std::string Render(const RunResult& result) {
  std::ostringstream out;
  Status status = JsonReporter().Render(result, out);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out.str();
}

// report.json is its own golden file: the fixtures are report.json files.
TEST(JsonReporterTest, RendersTheFixturesByteForByte) {
  for (const char* name : {"clean", "mixed"}) {
    const std::string path = std::string(LOCKSTEP_SOURCE_DIR) + "/fixtures/reports/" + name + ".report.json";
    EXPECT_EQ(Render(testing::LoadFixture(name)), testing::ReadFileOrEmpty(path)) << name;
  }
}

TEST(JsonReporterTest, HostileBytesStillGiveValidJson) {
  const std::string text = Render(testing::LoadFixture("hostile"));
  Result<RunResult> back = ParseRunResult(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->scenarios.size(), 8u);
  // The lone surrogate and the stray bytes became U+FFFD; the NUL is kept (JSON can carry it).
  EXPECT_THAT(back->scenarios[0].id, ::testing::HasSubstr("bad&name-\xEF\xBF\xBD"));
  EXPECT_THAT(back->scenarios[0].id, ::testing::HasSubstr(std::string(1, '\0') + "-end"));
  testing::ExpectMatchesGolden(text, "hostile.report.json");
}

}  // namespace
}  // namespace lockstep
