// `lockstep report DIR`, run as the built binary on a copy of the canned run results under
// fixtures/reports/: every format asked for is written, report.json is left untouched, and a
// missing or invalid report.json is a usage error that names the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/core/testing/build_paths.h"
#include "harness/core/testing/temp_dir.h"

#include "harness/cli/testing/run_program.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ProgramResult;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const fs::path kFixtures = fs::path(LOCKSTEP_SOURCE_DIR) / "fixtures" / "reports";

class ReportCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "run");
    // Under GitHub Actions `report` would append to the job's real step summary.
    ::unsetenv("GITHUB_STEP_SUMMARY");
    ::unsetenv("GITHUB_ACTIONS");
  }

  ProgramResult Lockstep(const std::vector<std::string>& args) {
    return testing::RunProgram(testing::LockstepBinary(), args, root_);
  }

  testing::TempDir temp_{"lockstep_report_cmd_"};
  const fs::path root_ = temp_.path();
};

TEST_F(ReportCommandTest, RendersEveryRequestedFormatAndLeavesReportJsonAlone) {
  fs::copy_file(kFixtures / "mixed.report.json", root_ / "run" / "report.json");
  const std::string before = ReadFile(root_ / "run" / "report.json");
  const auto mtime = fs::last_write_time(root_ / "run" / "report.json");

  ProgramResult r = Lockstep({"report", "run", "--junit", "junit.xml", "--markdown", "summary.md", "--html", "r.html"});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // the run failed, but rendering it went fine
  // The run's summary, as `lockstep run` ends.
  EXPECT_THAT(r.out, HasSubstr("[  FAILED  ] ddp_grad_not_reduced (fail)\n"));
  EXPECT_THAT(r.out, HasSubstr("1 passed, 4 failed, 1 error, 1 xfail, 1 skipped\n"));
  EXPECT_THAT(r.out, HasSubstr("html: r.html\n"));

  // The same bytes the reporters' golden tests pin for this result.
  EXPECT_EQ(ReadFile(root_ / "junit.xml"), ReadFile(kFixtures / "golden" / "mixed.junit.xml"));
  EXPECT_EQ(ReadFile(root_ / "summary.md"), ReadFile(kFixtures / "golden" / "mixed.md"));
  const std::string html = ReadFile(root_ / "r.html");
  EXPECT_THAT(html, HasSubstr("<canvas id=\"loss-1\""));
  EXPECT_THAT(html, HasSubstr("Chart.js v"));  // inlined: the file opens offline

  EXPECT_EQ(ReadFile(root_ / "run" / "report.json"), before);
  EXPECT_EQ(fs::last_write_time(root_ / "run" / "report.json"), mtime);
  EXPECT_FALSE(fs::exists(root_ / "run" / "report.json.tmp"));
}

TEST_F(ReportCommandTest, WithoutFlagsItPrintsTheSummaryOnly) {
  fs::copy_file(kFixtures / "clean.report.json", root_ / "run" / "report.json");
  ProgramResult r = Lockstep({"report", "run"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(" passed, 0 failed"));
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root_)) files += entry.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);
}

TEST_F(ReportCommandTest, MissingReportJsonIsAUsageErrorNamingTheFile) {
  ProgramResult r = Lockstep({"report", "run", "--html", "r.html"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("lockstep report: run/report.json: no such file"));
  EXPECT_FALSE(fs::exists(root_ / "r.html"));

  ProgramResult nowhere = Lockstep({"report", "no/such/dir"});
  EXPECT_EQ(nowhere.exit_code, 2);
  EXPECT_THAT(nowhere.err, HasSubstr("no/such/dir/report.json: no such file"));
}

TEST_F(ReportCommandTest, InvalidReportJsonIsAUsageErrorNamingTheFile) {
  std::ofstream(root_ / "run" / "report.json") << "{\"schema\": \"lockstep.report/1\", \"scenarios\": 7}";
  ProgramResult r = Lockstep({"report", "run", "--junit", "j.xml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("run/report.json"));
  EXPECT_FALSE(fs::exists(root_ / "j.xml"));

  std::ofstream(root_ / "run" / "report.json", std::ios::trunc) << "{\"schema\": \"lockstep.report/9\"}";
  ProgramResult future = Lockstep({"report", "run"});
  EXPECT_EQ(future.exit_code, 2);
  EXPECT_THAT(future.err, HasSubstr("run/report.json"));
}

// `--html run/report.json` used to overwrite the report it rendered from.
TEST_F(ReportCommandTest, AnOutputOnTheRunsOwnFilesIsRefused) {
  fs::copy_file(kFixtures / "mixed.report.json", root_ / "run" / "report.json");
  const std::string before = ReadFile(root_ / "run" / "report.json");
  ProgramResult r = Lockstep({"report", "run", "--html", "run/report.json"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr("--html run/report.json: is the run directory's own report.json"));
  ProgramResult inside = Lockstep({"report", "run", "--junit", "run/ddp_hang/traces/rank-0.trace"});
  EXPECT_EQ(inside.exit_code, 2) << inside.out;
  EXPECT_THAT(inside.err, HasSubstr("lies inside scenario ddp_hang's folder"));
  EXPECT_EQ(ReadFile(root_ / "run" / "report.json"), before);
}

// --html X --markdown X wrote one report over the other.
TEST_F(ReportCommandTest, TwoOutputsOnOneFileAreRefused) {
  fs::copy_file(kFixtures / "clean.report.json", root_ / "run" / "report.json");
  ProgramResult r = Lockstep({"report", "run", "--html", "out.txt", "--markdown", "./out.txt"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("writes there too"));
  EXPECT_FALSE(fs::exists(root_ / "out.txt"));
}

TEST_F(ReportCommandTest, AnUnwritableOutputIsAHarnessError) {
  fs::copy_file(kFixtures / "clean.report.json", root_ / "run" / "report.json");
  ProgramResult r = Lockstep({"report", "run", "--html", "missing-dir/r.html"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("missing-dir/r.html"));
}

}  // namespace
}  // namespace lockstep
