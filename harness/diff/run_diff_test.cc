#include "harness/diff/run_diff.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/diff/testing/canned_traces.h"
#include "harness/result/run_result_json.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::CannedTraces;
using testing::Corrupt;
using testing::FreshTempDir;
using testing::WriteTraces;
using Verdict = ScenarioDiff::Verdict;

struct CannedScenario {
  CannedScenario(std::string id_, int ranks_, Outcome outcome_ = Outcome::kPass, std::string reason_ = "")
      : id(std::move(id_)), ranks(ranks_), outcome(outcome_), reason(std::move(reason_)) {}
  std::string id;
  int ranks;
  Outcome outcome;
  std::string reason;
};

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A run directory as `lockstep run --out DIR` leaves it: report.json, and traces of every
// scenario that ran (not of skipped ones).
void WriteRunDir(const fs::path& dir, const std::vector<CannedScenario>& scenarios) {
  RunResult result;
  result.context.command_line = "lockstep run scenarios --out " + dir.string();
  for (const CannedScenario& c : scenarios) {
    ScenarioResult s;
    s.id = c.id;
    s.file = "scenarios/" + c.id + ".yaml";
    s.ranks = c.ranks;
    s.steps = 4;
    s.outcome = c.outcome;
    s.reason = c.reason;
    s.run_dir = c.id;
    result.scenarios.push_back(s);
  }
  WriteFile(dir / "report.json", SerializeRunResult(result));
}

void WriteCanned(const fs::path& dir, const std::string& id, const std::vector<RankTrace>& traces) {
  Status s = WriteTraces(traces, dir / id / "traces");
  ASSERT_TRUE(s.ok()) << s.ToString();
}

class RunDiffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = FreshTempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    a_ = root_ / "a";
    b_ = root_ / "b";
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_, a_, b_;
};

TEST_F(RunDiffTest, IdenticalRuns) {
  for (const fs::path& dir : {a_, b_}) {
    WriteRunDir(dir, {{"clean/ddp_mlp", 2}, {"clean/zero1_mlp", 4}});
    WriteCanned(dir, "clean/ddp_mlp", CannedTraces(2, 4));
    WriteCanned(dir, "clean/zero1_mlp", CannedTraces(4, 4));
  }
  Result<RunDiff> diff = DiffRunDirs(a_, b_);
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_TRUE(diff->Identical());
  ASSERT_EQ(diff->scenarios.size(), 2u);
  EXPECT_EQ(diff->scenarios[0].id, "clean/ddp_mlp");
  EXPECT_EQ(diff->scenarios[1].ranks_a, 4);
  EXPECT_EQ(diff->Count(Verdict::kIdentical), 2);
}

TEST_F(RunDiffTest, BitflipInOneRunIsFoundAtItsStepTensorAndRank) {
  for (const fs::path& dir : {a_, b_}) WriteRunDir(dir, {{"clean/ddp_mlp", 2}, {"inject/bitflip", 4}});
  WriteCanned(a_, "clean/ddp_mlp", CannedTraces(2, 4));
  WriteCanned(b_, "clean/ddp_mlp", CannedTraces(2, 4));
  WriteCanned(a_, "inject/bitflip", CannedTraces(4, 4));
  auto flipped = CannedTraces(4, 4);
  Corrupt(flipped, 3, TensorKind::kParam, "fc1.weight", 2);
  WriteCanned(b_, "inject/bitflip", flipped);

  Result<RunDiff> diff = DiffRunDirs(a_, b_);
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_FALSE(diff->Identical());
  EXPECT_EQ(diff->scenarios[0].verdict(), Verdict::kIdentical);
  const ScenarioDiff& d = diff->scenarios[1];
  EXPECT_EQ(d.verdict(), Verdict::kDifferent);
  ASSERT_TRUE(d.first.has_value());
  EXPECT_EQ(d.first->step, 2);
  EXPECT_EQ(d.first->tensors[0].name, "fc1.weight");
  EXPECT_THAT(d.first->tensors[0].Ranks(), ElementsAre(3));
}

TEST_F(RunDiffTest, ScenariosInOnlyOneRunAreListed) {
  WriteRunDir(a_, {{"x", 2}, {"only_a", 2}});
  WriteRunDir(b_, {{"only_b", 2}, {"x", 2}});
  for (const fs::path& dir : {a_, b_}) WriteCanned(dir, "x", CannedTraces(2, 2));
  WriteCanned(a_, "only_a", CannedTraces(2, 2));
  WriteCanned(b_, "only_b", CannedTraces(2, 2));

  Result<RunDiff> diff = DiffRunDirs(a_, b_);
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_TRUE(diff->Identical());
  EXPECT_THAT(diff->only_in_a, ElementsAre("only_a"));
  EXPECT_THAT(diff->only_in_b, ElementsAre("only_b"));
}

TEST_F(RunDiffTest, ScenarioOptionSelectsOneAndMustBeInBothRuns) {
  WriteRunDir(a_, {{"x", 2}, {"y", 2}});
  WriteRunDir(b_, {{"x", 2}});
  WriteCanned(a_, "x", CannedTraces(2, 2));
  auto other = CannedTraces(2, 2);
  other[0].steps[1].loss = 99;
  WriteCanned(b_, "x", other);
  WriteCanned(a_, "y", CannedTraces(2, 2));

  Result<RunDiff> x = DiffRunDirs(a_, b_, RunDiffOptions{"x"});
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ASSERT_EQ(x->scenarios.size(), 1u);
  EXPECT_EQ(x->scenarios[0].first->step, 1);
  EXPECT_TRUE(x->only_in_a.empty());  // "y" was not asked for

  Result<RunDiff> y = DiffRunDirs(a_, b_, RunDiffOptions{"y"});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(), HasSubstr("scenario y is not in " + b_.string() + " (it has: x)"));
}

TEST_F(RunDiffTest, WithoutReportJsonScenariosAreFoundByTheirTraces) {
  for (const fs::path& dir : {a_, b_}) {
    WriteCanned(dir, "clean/ddp_mlp", CannedTraces(3, 2, "clean/ddp_mlp"));
    fs::create_directories(dir / "clean/ddp_mlp/logs");
  }
  Result<std::vector<RunDirScenario>> index = IndexRunDir(a_);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  ASSERT_EQ(index->size(), 1u);
  EXPECT_EQ((*index)[0].id, "clean/ddp_mlp");
  EXPECT_EQ((*index)[0].ranks, 3);  // from the header of rank-0.trace
  Result<RunDiff> diff = DiffRunDirs(a_, b_);
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_TRUE(diff->Identical());

  // A scenario's own folder works as a run directory too: its id comes from the trace header.
  Result<std::vector<RunDirScenario>> one = IndexRunDir(a_ / "clean/ddp_mlp");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ((*one)[0].id, "clean/ddp_mlp");
}

TEST_F(RunDiffTest, SkippedScenariosAreNotComparedAndOneSidedTracesDiffer) {
  const std::string no_nccl = "backend nccl: this build has no NCCL";
  WriteRunDir(a_, {{"x", 2}, {"nccl", 2, Outcome::kSkipped, no_nccl}, {"gpu_only", 2, Outcome::kSkipped, no_nccl}});
  WriteRunDir(b_, {{"x", 2}, {"nccl", 2, Outcome::kSkipped, no_nccl}, {"gpu_only", 2}});
  for (const fs::path& dir : {a_, b_}) WriteCanned(dir, "x", CannedTraces(2, 2));
  WriteCanned(b_, "gpu_only", CannedTraces(2, 2));

  Result<RunDiff> diff = DiffRunDirs(a_, b_);
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_EQ(diff->scenarios[1].verdict(), Verdict::kNotCompared);
  EXPECT_EQ(diff->scenarios[1].no_traces_in, "both");
  EXPECT_EQ(diff->scenarios[2].verdict(), Verdict::kDifferent);
  EXPECT_EQ(diff->scenarios[2].no_traces_in, "A");
  EXPECT_THAT(diff->scenarios[2].notes, ElementsAre(HasSubstr("A: no traces in")));
  EXPECT_THAT(diff->scenarios[2].notes[0], HasSubstr("(outcome skipped: " + no_nccl + ")"));
  EXPECT_FALSE(diff->Identical());
}

TEST_F(RunDiffTest, BadInputIsAnInvalidArgumentNamingThePath) {
  WriteRunDir(a_, {{"x", 2}});
  WriteCanned(a_, "x", CannedTraces(2, 2));

  Result<RunDiff> missing = DiffRunDirs(a_, root_ / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr((root_ / "nope").string() + ": not a run directory (no such folder)"));

  fs::create_directories(b_);
  Result<RunDiff> empty = DiffRunDirs(a_, b_);
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("no report.json"));

  WriteFile(b_ / "report.json", "{ not json");
  Result<RunDiff> invalid = DiffRunDirs(a_, b_);
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(invalid.status().message(), HasSubstr((b_ / "report.json").string()));

  WriteRunDir(b_, {{"x", 2}});
  WriteCanned(b_, "x", CannedTraces(2, 2));
  WriteFile(b_ / "x/traces/rank-1.trace", "this is not a trace\n");
  Result<RunDiff> corrupt = DiffRunDirs(a_, b_);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(corrupt.status().message(), HasSubstr((b_ / "x/traces/rank-1.trace").string() + ":1: "));
}

TEST_F(RunDiffTest, NoScenarioInBothRunsIsBadInput) {
  WriteRunDir(a_, {{"x", 2}});
  WriteRunDir(b_, {{"y", 2}});
  WriteCanned(a_, "x", CannedTraces(2, 2));
  WriteCanned(b_, "y", CannedTraces(2, 2));
  Result<RunDiff> diff = DiffRunDirs(a_, b_);
  ASSERT_FALSE(diff.ok());
  EXPECT_THAT(diff.status().message(), HasSubstr("no scenario is in both runs"));
}

}  // namespace
}  // namespace lockstep
