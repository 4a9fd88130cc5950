#include "reports/junit_reporter.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/core/testing/build_paths.h"
#include "reports/golden_file_testutil.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Render(const RunResult& result) {
  std::ostringstream out;
  Status status = JunitReporter().Render(result, out);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out.str();
}

// Per test, so that ctest -j running tests side by side never shares a file.
std::string TempPath(const std::string& name) {
  static const testing::TempDir scratch("lockstep_junit_test_");  // removed when the test program ends
  return (scratch / (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" + name)).string();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

bool HaveXmllint() { return std::system("xmllint --version > /dev/null 2>&1") == 0; }

// Runs a command, returns its exit status and (stdout + stderr).
int RunCommand(const std::string& command, std::string* output) {
  output->clear();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output->append(buf, n);
  return pclose(pipe);
}

TEST(JunitReporterTest, GoldenClean) { testing::ExpectMatchesGolden(Render(testing::LoadFixture("clean")), "clean.junit.xml"); }
TEST(JunitReporterTest, GoldenMixed) { testing::ExpectMatchesGolden(Render(testing::LoadFixture("mixed")), "mixed.junit.xml"); }
TEST(JunitReporterTest, GoldenHostile) {
  testing::ExpectMatchesGolden(Render(testing::LoadFixture("hostile")), "hostile.junit.xml");
}

TEST(JunitReporterTest, SuitePerScenarioCasePerChecker) {
  const std::string xml = Render(testing::LoadFixture("mixed"));
  EXPECT_THAT(xml, HasSubstr("<testsuites name=\"lockstep\" tests=\"21\" failures=\"5\" errors=\"1\" time=\"49.250\">"));
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"ddp_grad_not_reduced\" tests=\"4\" failures=\"2\" errors=\"0\" "
                             "skipped=\"0\" time=\"5.500\" timestamp=\"2024-01-01T00:00:00Z\" hostname=\"HOST\">"));
  // A failing case names the scenario file and line; a passing one does not.
  EXPECT_THAT(xml, HasSubstr("<testcase name=\"replica_weights\" classname=\"lockstep.ddp_grad_not_reduced\" "
                             "time=\"0.020\" file=\"scenarios/bugs/ddp_grad_not_reduced.yaml\" line=\"3\">"));
  EXPECT_THAT(xml, HasSubstr("<testcase name=\"collective_order\" classname=\"lockstep.ddp_grad_not_reduced\" "
                             "time=\"0.004\"/>"));
  EXPECT_THAT(xml, HasSubstr("<failure message=\"replica_weights step 3 tensor fc1.weight ranks [1]: weights diverge "
                             "after step 3: odd rank 1 by majority vote (3 of 4 agree)\" type=\"replica_weights\">"));
}

TEST(JunitReporterTest, LitOutcomesMapToJunit) {
  const std::string xml = Render(testing::LoadFixture("mixed"));
  // xfail: a passed case with a note.
  EXPECT_THAT(xml, HasSubstr("<testcase name=\"replica_weights\" classname=\"lockstep.inject_skip_grad_allreduce\" "
                             "time=\"0.020\">\n      <system-out><![CDATA[xfail: expected failure"));
  // xpass: every checker passed, so the scenario-level case carries the failure.
  EXPECT_THAT(xml, HasSubstr("<testcase name=\"scenario\" classname=\"lockstep.inject_bitflip_missed\" time=\"2.000\" "
                             "file=\"scenarios/inject/bitflip.yaml\" line=\"1\">\n      <failure message=\"expected "
                             "replica_weights at step 2 on ranks [1], but no such finding appeared\" type=\"xpass\">"));
  // A harness error before any checker ran.
  EXPECT_THAT(xml, HasSubstr("<error message=\"launcher: mpirun exited with code 213 before any rank started\" "
                             "type=\"error\">"));
  // A timeout explained by the hang checker: its failure, with the rank logs.
  EXPECT_THAT(xml, HasSubstr("<failure message=\"hang step 4 ranks [2]: rank 2 never reached all_reduce world seq 17 "
                             "that ranks [0, 1, 3] wait in\" type=\"hang\">"));
  EXPECT_THAT(xml, HasSubstr("--- rank 2 ---\nstep 4: injected hang"));
  EXPECT_THAT(xml, HasSubstr("<skipped message=\"scenario skipped\"/>"));
}

TEST(JunitReporterTest, HostileNamesStayWellFormed) {
  const std::string xml = Render(testing::LoadFixture("hostile"));
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"bad&amp;name"));
  EXPECT_THAT(xml, HasSubstr("name=\"cdata]]&gt;end\""));
  EXPECT_THAT(xml, HasSubstr("]]]]><![CDATA[>"));
  EXPECT_THAT(xml, Not(HasSubstr("\x01")));
  EXPECT_THAT(xml, Not(HasSubstr("\x1b")));
  EXPECT_THAT(xml, Not(HasSubstr(std::string(1, '\0'))));
  EXPECT_THAT(xml, Not(HasSubstr("\xEF\xBF\xBE")));  // U+FFFE
  EXPECT_THAT(xml, Not(HasSubstr("\xED\xA0\x80")));  // lone surrogate
  EXPECT_THAT(xml, HasSubstr("unicode-日本語-αβγ-🚀"));
  if (!HaveXmllint()) GTEST_SKIP() << "xmllint not found (install libxml2-utils): well-formedness not checked";
  const std::string path = TempPath("hostile.junit.xml");
  WriteFile(path, xml);
  std::string output;
  EXPECT_EQ(RunCommand("xmllint --noout '" + path + "'", &output), 0) << output;
}

// fixtures/reports/junit.xsd follows the Jenkins xunit-plugin schema (junit-10.xsd), plus the
// testcase `file` and `line` attributes EnricoMi/publish-unit-test-result-action reads, marked
// "lockstep extension". The strict check removes both from the schema and from the output, so the
// rest is checked against the plain Jenkins format.
TEST(JunitReporterTest, ValidatesAgainstJunitXsd) {
  if (!HaveXmllint()) GTEST_SKIP() << "xmllint not found (install libxml2-utils): XSD validation skipped";
  const std::string xsd = std::string(LOCKSTEP_SOURCE_DIR) + "/fixtures/reports/junit.xsd";
  const std::string xsd_text = testing::ReadFileOrEmpty(xsd);
  ASSERT_THAT(xsd_text, HasSubstr("lockstep extension"));
  std::string strict_xsd_text;
  std::istringstream lines(xsd_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("lockstep extension") == std::string::npos) strict_xsd_text += line + "\n";
  }
  const std::string strict_xsd = TempPath("junit-strict.xsd");
  WriteFile(strict_xsd, strict_xsd_text);

  for (const char* name : {"clean", "mixed", "hostile"}) {
    const std::string xml = Render(testing::LoadFixture(name));
    const std::string path = TempPath(std::string(name) + ".junit.xml");
    WriteFile(path, xml);
    std::string output;
    EXPECT_EQ(RunCommand("xmllint --noout --schema '" + xsd + "' '" + path + "'", &output), 0) << name << ":\n" << output;

    const std::string stripped = std::regex_replace(xml, std::regex(" (file|line)=\"[^\"]*\""), "");
    const std::string strict_path = TempPath(std::string(name) + ".strict.junit.xml");
    WriteFile(strict_path, stripped);
    EXPECT_EQ(RunCommand("xmllint --noout --schema '" + strict_xsd + "' '" + strict_path + "'", &output), 0)
        << name << " (strict):\n" << output;
  }
}

TEST(JunitReporterTest, TheSchemaCheckCanFail) {
  if (!HaveXmllint()) GTEST_SKIP() << "xmllint not found (install libxml2-utils)";
  const std::string xsd = std::string(LOCKSTEP_SOURCE_DIR) + "/fixtures/reports/junit.xsd";
  const std::string path = TempPath("invalid.junit.xml");
  // A testcase without its required name, and a time the schema's pattern refuses.
  WriteFile(path, "<testsuites><testsuite name=\"s\" tests=\"1\" failures=\"0\" errors=\"0\" time=\"nan\">"
                  "<testcase classname=\"c\"/></testsuite></testsuites>\n");
  std::string output;
  EXPECT_NE(RunCommand("xmllint --noout --schema '" + xsd + "' '" + path + "'", &output), 0) << output;
}

TEST(JunitReporterTest, EmptyRunIsValid) {
  const std::string xml = Render(RunResult{});
  EXPECT_EQ(xml,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<testsuites name=\"lockstep\" tests=\"0\" failures=\"0\" errors=\"0\" time=\"0.000\">\n"
            "</testsuites>\n");
}

}  // namespace
}  // namespace lockstep
