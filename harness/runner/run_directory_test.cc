#include "harness/runner/run_directory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <iterator>

#include <fstream>

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class RunDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "lockstep_run_dir_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void Write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  fs::path root_;
};

// `lockstep run X.yaml --out .` with a scenario named `src` used to delete ./src.
TEST_F(RunDirectoryTest, AFolderLockstepDidNotMakeIsNeverReplaced) {
  Write(root_ / "src" / "main.cc", "int main() {}\n");
  Status s = PrepareRunDirectory(root_, {"src"}, /*adopt_existing=*/false);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("is not a lockstep run directory"));
  // Adopting the directory does not make its folders ours.
  s = PrepareRunDirectory(root_, {"src"}, /*adopt_existing=*/true);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("scenario src would replace " + (root_ / "src").string() +
                                     ", which lockstep did not make"));
  EXPECT_FALSE(ResetScenarioDirectory(root_ / "src").ok());
  EXPECT_TRUE(fs::exists(root_ / "src" / "main.cc"));
  EXPECT_FALSE(fs::exists(root_ / kRunMarkerFile));
}

TEST_F(RunDirectoryTest, ANewOrEmptyDirectoryBecomesARunDirectory) {
  ASSERT_TRUE(PrepareRunDirectory(root_ / "new", {"a"}, false).ok());
  EXPECT_TRUE(fs::is_regular_file(root_ / "new" / kRunMarkerFile));
  const fs::path empty = root_ / "empty";
  fs::create_directories(empty);
  ASSERT_TRUE(PrepareRunDirectory(empty, {"a"}, false).ok());
  EXPECT_TRUE(fs::is_regular_file(empty / kRunMarkerFile));
  // Marked: a second run may go there, and replaces the scenario folders it made.
  ASSERT_TRUE(ResetScenarioDirectory(empty / "a").ok());
  Write(empty / "a" / "traces" / "rank-0.trace", "old");
  Write(empty / "a" / "notes.txt", "lockstep made the folder, so its content is its own");
  ASSERT_TRUE(PrepareRunDirectory(empty, {"a"}, false).ok());
  ASSERT_TRUE(ResetScenarioDirectory(empty / "a").ok());
  EXPECT_FALSE(fs::exists(empty / "a" / "traces" / "rank-0.trace"));
  EXPECT_TRUE(fs::is_regular_file(empty / "a" / kScenarioMarkerFile));
}

// A run killed after this point must not leave the previous run's "1 passed" beside its traces.
TEST_F(RunDirectoryTest, TheOldReportGoesBeforeTheFirstRankStarts) {
  ASSERT_TRUE(PrepareRunDirectory(root_, {"a"}, false).ok());
  Write(root_ / kReportFile, R"({"schema": "lockstep.report/1", "scenarios": []})");
  ASSERT_TRUE(PrepareRunDirectory(root_, {"a"}, false).ok());
  EXPECT_FALSE(fs::exists(root_ / kReportFile));
}

// A user's train/ holding logs/ (TensorBoard's default beside train.py) looked like a scenario
// folder by its entry names and was deleted by `exec --out . --reuse-out`, and by any run into a
// marked run directory. Only lockstep's marker, naming the folder, proves a folder is lockstep's.
TEST_F(RunDirectoryTest, AFolderIsLockstepsOnlyByItsMarkerNeverByItsEntryNames) {
  ASSERT_TRUE(PrepareRunDirectory(root_, {"a"}, false).ok());  // a marked run directory
  Write(root_ / "train" / "logs" / "events.out", "tensorboard");
  Write(root_ / "old" / "traces" / "rank-0.trace", "looks like ours");
  for (const char* id : {"train", "old"}) {
    Status s = PrepareRunDirectory(root_, {id}, /*adopt_existing=*/true);
    ASSERT_FALSE(s.ok()) << id;
    EXPECT_THAT(s.message(), HasSubstr("which lockstep did not make"));
    EXPECT_FALSE(ResetScenarioDirectory(root_ / id).ok()) << id;
  }
  EXPECT_TRUE(fs::exists(root_ / "train" / "logs" / "events.out"));
  EXPECT_TRUE(fs::exists(root_ / "old" / "traces" / "rank-0.trace"));
  // A marker copied from another folder names that folder, not this one.
  ASSERT_TRUE(ResetScenarioDirectory(root_ / "a").ok());
  fs::copy_file(root_ / "a" / kScenarioMarkerFile, root_ / "train" / kScenarioMarkerFile);
  EXPECT_FALSE(IsScenarioDirectory(root_ / "train"));
  EXPECT_FALSE(ResetScenarioDirectory(root_ / "train").ok());
  EXPECT_TRUE(fs::exists(root_ / "train" / "logs" / "events.out"));
  // A marker that is a symlink proves nothing either.
  fs::create_directories(root_ / "b");
  fs::create_symlink(root_ / "a" / kScenarioMarkerFile, root_ / "b" / kScenarioMarkerFile);
  EXPECT_FALSE(IsScenarioDirectory(root_ / "b"));
  // The folders lockstep made are its own, and the markers of before ids still count.
  EXPECT_TRUE(IsScenarioDirectory(root_ / "a"));
  Write(root_ / "legacy" / kScenarioMarkerFile, "made by lockstep run; replaced by the next run of this scenario\n");
  EXPECT_TRUE(IsScenarioDirectory(root_ / "legacy"));
}

// Two runs into one --out overwrote each other's traces and report. Another lockstep process's
// lock is another open file description's flock on the directory: made here by hand.
TEST_F(RunDirectoryTest, ARunDirectoryAnotherRunHoldsIsRefused) {
  const fs::path dir = root_ / "busy";
  fs::create_directories(dir);
  Write(dir / kRunMarkerFile, "This is a lockstep run directory\nrun: pid 4242\n");
  const int other = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(other, 0);
  ASSERT_EQ(::flock(other, LOCK_EX | LOCK_NB), 0);
  Status s = PrepareRunDirectory(dir, {"a"}, false);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--out " + dir.string() + ": another lockstep run is writing into it (pid 4242)"));
  EXPECT_FALSE(fs::exists(dir / "a"));
  EXPECT_THAT(ReadAll(dir / kRunMarkerFile), HasSubstr("pid 4242")) << "nothing written";
  ::close(other);  // that run ended: the directory is free
  ASSERT_TRUE(PrepareRunDirectory(dir, {"a"}, false).ok());
  EXPECT_THAT(ReadAll(dir / kRunMarkerFile), HasSubstr("run: pid " + std::to_string(::getpid())));
  EXPECT_TRUE(PrepareRunDirectory(dir, {"a"}, false).ok()) << "the holder itself may prepare it again";
  // And now this process holds it against any other.
  const int third = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(third, 0);
  EXPECT_NE(::flock(third, LOCK_EX | LOCK_NB), 0);
  ::close(third);
}

TEST_F(RunDirectoryTest, AFileAsOutOrAForeignReportJsonIsRefused) {
  Write(root_ / "file", "x");
  Status s = PrepareRunDirectory(root_ / "file", {"a"}, false);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("exists and is not a directory"));
  fs::remove(root_ / "file");
  Write(root_ / kReportFile, "{\"mine\": true}");
  s = PrepareRunDirectory(root_, {"a"}, /*adopt_existing=*/true);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("holds a report.json that lockstep did not write"));
}

TEST_F(RunDirectoryTest, ReportOutputsMayNotLandOnTheRunsOwnFiles) {
  const fs::path out = root_ / "out";
  EXPECT_THAT(CheckReportOutput(out, {"a"}, "--html", out / "report.json").message(),
              HasSubstr("--html " + (out / "report.json").string() + ": is the run directory's own report.json"));
  EXPECT_THAT(CheckReportOutput(out, {"a"}, "--junit", out / "a" / "traces" / "rank-0.trace").message(),
              HasSubstr("lies inside scenario a's folder"));
  EXPECT_THAT(CheckReportOutput(out, {"a/b"}, "--junit", out / "a" / "b" / "x.xml").message(),
              HasSubstr("lies inside scenario a/b's folder"));
  fs::create_directories(root_ / "dir");
  EXPECT_THAT(CheckReportOutput(out, {"a"}, "--junit", root_ / "dir").message(), HasSubstr("is a directory"));
  EXPECT_TRUE(CheckReportOutput(out, {"a"}, "--junit", out / "junit.xml").ok());
  EXPECT_TRUE(CheckReportOutput(out, {"a"}, "--html", out / "ab.html").ok());
  EXPECT_TRUE(CheckReportOutput(out, {"a"}, "--html", root_ / "report.html").ok());
}

}  // namespace
}  // namespace lockstep
