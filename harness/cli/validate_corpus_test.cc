// The bad-scenario corpus: every file under fixtures/bad_scenarios/ holds one mistake, and its
// sibling *.expected holds the exact line `lockstep validate` must print for it. Each file is
// one test, run through the built binary from the source folder so the path printed is the
// relative one a user sees.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"
#include "harness/scenario/scenario_loader.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using testing::Lines;
using testing::ProgramResult;

const fs::path kSourceDir = LOCKSTEP_SOURCE_DIR;
const fs::path kCorpus = "fixtures/bad_scenarios";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Corpus files relative to the source folder ("fixtures/bad_scenarios/x.yaml"), sorted.
std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kSourceDir / kCorpus, ec)) {
    if (e.path().extension() == ".yaml") files.push_back((kCorpus / e.path().filename()).generic_string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ExpectedLine(const std::string& file) {
  std::string text = ReadFile(kSourceDir / fs::path(file).replace_extension(".expected"));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// Lines that are diagnostics (they start with the corpus path), not the summary.
std::vector<std::string> DiagnosticLines(const std::string& err) {
  std::vector<std::string> out;
  for (const std::string& line : Lines(err)) {
    if (line.rfind(kCorpus.generic_string() + "/", 0) == 0) out.push_back(line);
  }
  return out;
}

class BadScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BadScenarioTest, GivesItsExpectedLineAndExitCode2) {
  const std::string file = GetParam();
  const std::string expected = ExpectedLine(file);
  ASSERT_FALSE(expected.empty()) << "missing or empty " << fs::path(file).replace_extension(".expected");
  ProgramResult r = testing::RunProgram(testing::LockstepBinary(), {"validate", file}, kSourceDir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(DiagnosticLines(r.err), ElementsAre(expected)) << r.err;
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadScenarioTest, ::testing::ValuesIn(CorpusFiles()), TestName);

TEST(BadScenarioCorpusTest, HasAtLeast25FilesEachWithItsExpectedLine) {
  const std::vector<std::string> files = CorpusFiles();
  EXPECT_GE(files.size(), 25u);
  for (const std::string& f : files) {
    EXPECT_TRUE(fs::exists(kSourceDir / fs::path(f).replace_extension(".expected"))) << f;
  }
  // And no expectation without its file.
  for (const auto& e : fs::directory_iterator(kSourceDir / kCorpus)) {
    if (e.path().extension() == ".expected") {
      EXPECT_TRUE(fs::exists(fs::path(e.path()).replace_extension(".yaml"))) << e.path();
    }
  }
}

TEST(BadScenarioCorpusTest, TheWholeFolderAtOnceGivesEveryLineInFileOrder) {
  std::vector<std::string> expected;
  for (const std::string& f : CorpusFiles()) expected.push_back(ExpectedLine(f));
  ProgramResult r = testing::RunProgram(testing::LockstepBinary(), {"validate", kCorpus.generic_string()}, kSourceDir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(DiagnosticLines(r.err), expected);
  EXPECT_EQ(Lines(r.err).back(), "lockstep validate: " + std::to_string(expected.size()) + " errors in scenario files");
}

// Generated here rather than committed: a 1 MiB fixture would bloat the repository.
TEST(BadScenarioCorpusTest, HugeFileIsRefusedBeforeParsing) {
  const testing::TempDir temp("lockstep_huge_");
  const fs::path& dir = temp.path();
  {
    std::ofstream out(dir / "huge.yaml", std::ios::binary);
    out << "description: \"" << std::string(kMaxScenarioFileBytes, 'x') << "\"\n";
  }
  ProgramResult r = testing::RunProgram(testing::LockstepBinary(), {"validate", "huge.yaml"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err).at(0), "huge.yaml:1:1: file is " + std::to_string(kMaxScenarioFileBytes + 16) +
                                    " bytes; a scenario file may be at most 1 MiB (1048576 bytes)");
}

}  // namespace
}  // namespace lockstep
