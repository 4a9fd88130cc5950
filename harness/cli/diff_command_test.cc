// `lockstep diff`, run as the built binary on run directories of canned traces: identical runs
// exit 0, a bitflip in one run exits 1 naming its step, tensor and rank, bad input exits 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/cli/testing/run_program.h"
#include "harness/diff/testing/canned_traces.h"
#include "harness/result/run_result_json.h"
#include "harness/trace/trace_record_json.h"
#include "harness/trace/trace_stream.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::CannedTraces;
using testing::ProgramResult;

class DiffCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::FreshTempDir(std::string("cmd_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { fs::remove_all(root_); }

  // A run of one 4-rank scenario "inject/bitflip" in root_/<name>.
  void WriteRun(const std::string& name, const std::vector<RankTrace>& traces) {
    RunResult result;
    ScenarioResult s;
    s.id = "inject/bitflip";
    s.ranks = static_cast<int>(traces.size());
    s.run_dir = s.id;
    result.scenarios.push_back(s);
    fs::create_directories(root_ / name);
    std::ofstream(root_ / name / "report.json") << SerializeRunResult(result);
    Status written = testing::WriteTraces(traces, root_ / name / s.id / "traces");
    ASSERT_TRUE(written.ok()) << written.ToString();
  }

  ProgramResult Lockstep(const std::vector<std::string>& args) {
    return testing::RunProgram(testing::LockstepBinary(), args, root_);
  }

  fs::path root_;
};

TEST_F(DiffCommandTest, IdenticalRunsExitZero) {
  WriteRun("mpi", CannedTraces(4, 5));
  WriteRun("gloo", CannedTraces(4, 5));
  ProgramResult r = Lockstep({"diff", "mpi", "gloo"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("inject/bitflip: identical (4 ranks, 6 steps"));
}

TEST_F(DiffCommandTest, ABitflipNamesItsStepTensorAndRank) {
  WriteRun("good", CannedTraces(4, 5));
  auto flipped = CannedTraces(4, 5);
  testing::Corrupt(flipped, 1, TensorKind::kParam, "fc2.weight", 3);
  WriteRun("tonight", flipped);

  ProgramResult r = Lockstep({"diff", "good", "tonight"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("inject/bitflip: DIFFERENT from step 3"));
  EXPECT_THAT(r.out, HasSubstr("tensor fc2.weight (param) differs on ranks [1]:"));
  EXPECT_THAT(r.out, HasSubstr("relative difference 0.000999"));

  ProgramResult j = Lockstep({"diff", "good", "tonight", "--json", "--scenario", "inject/bitflip"});
  EXPECT_EQ(j.exit_code, 1) << j.err;
  const nlohmann::json json = nlohmann::json::parse(j.out);
  EXPECT_EQ(json["identical"], false);
  EXPECT_EQ(json["scenarios"][0]["first_difference"]["step"], 3);
  EXPECT_EQ(json["scenarios"][0]["first_difference"]["tensors"][0]["name"], "fc2.weight");
  EXPECT_EQ(json["scenarios"][0]["first_difference"]["tensors"][0]["ranks"], nlohmann::json::array({1}));
}

// Rewrites every trace of run `name` in lockstep.trace/1: each record as `lockstep trace dump`
// prints it (a step with its tensors inline), the header's schema set to 1.0.
void RewriteAsVersionOne(const fs::path& run) {
  for (const auto& entry : fs::recursive_directory_iterator(run)) {
    if (entry.path().extension() != ".trace") continue;
    auto stream = RankTraceStream::Open(entry.path());
    ASSERT_TRUE(stream.ok());
    std::string text;
    for (;;) {
      auto record = (*stream)->NextRecord();
      ASSERT_TRUE(record.ok()) << record.status().ToString();
      if (!*record) break;
      if (auto* header = std::get_if<TraceHeader>(&**record)) header->schema = "lockstep.trace/1.0";
      text += TraceRecordToJson(**record) + "\n";
    }
    std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << text;
  }
}

// A nightly job compares tonight's run with a baseline written before lockstep.trace/2.
TEST_F(DiffCommandTest, ARunOfTheOldTraceFormatDiffsAgainstOneOfTheNew) {
  WriteRun("baseline", CannedTraces(4, 5));
  RewriteAsVersionOne(root_ / "baseline");
  std::ifstream first(root_ / "baseline" / "inject/bitflip" / "traces" / "rank-0.trace");
  std::string header;
  std::getline(first, header);
  ASSERT_THAT(header, HasSubstr(R"("schema":"lockstep.trace/1.0")"));
  WriteRun("good", CannedTraces(4, 5));
  auto flipped = CannedTraces(4, 5);
  testing::Corrupt(flipped, 1, TensorKind::kParam, "fc2.weight", 3);
  WriteRun("tonight", flipped);

  ProgramResult same = Lockstep({"diff", "baseline", "good"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_THAT(same.out, HasSubstr("inject/bitflip: identical (4 ranks, 6 steps"));
  ProgramResult r = Lockstep({"diff", "baseline", "tonight"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("inject/bitflip: DIFFERENT from step 3"));
  EXPECT_THAT(r.out, HasSubstr("tensor fc2.weight (param) differs on ranks [1]:"));
}

TEST_F(DiffCommandTest, BadInputExitsTwo) {
  WriteRun("good", CannedTraces(2, 2));
  ProgramResult missing = Lockstep({"diff", "good", "nope"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("lockstep diff: nope: not a run directory (no such folder)"));

  WriteRun("other", CannedTraces(2, 2));
  ProgramResult unknown = Lockstep({"diff", "good", "other", "--scenario", "ddp_mlp"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("scenario ddp_mlp is not in good (it has: inject/bitflip)"));

  ProgramResult usage = Lockstep({"diff", "good"});
  EXPECT_EQ(usage.exit_code, 2);
}

// A report.json that is a symlink loop was ignored: the folder was read as if it had none.
TEST_F(DiffCommandTest, AReportJsonThatCannotBeFollowedIsNamed) {
  WriteRun("good", CannedTraces(2, 2));
  WriteRun("loop", CannedTraces(2, 2));
  fs::remove(root_ / "loop" / "report.json");
  fs::create_symlink("report.json", root_ / "loop" / "report.json");
  ProgramResult r = Lockstep({"diff", "good", "loop"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("loop/report.json: cannot be read"));
}

// report.json's `ranks` sizes what diff reads: a huge claim is refused by name, not allocated.
TEST_F(DiffCommandTest, AReportsRankCountIsBounded) {
  WriteRun("good", CannedTraces(2, 2));
  RunResult result;
  ScenarioResult s;
  s.id = "inject/bitflip";
  s.ranks = 2000000000;
  s.run_dir = s.id;
  result.scenarios.push_back(s);
  WriteRun("huge", CannedTraces(2, 2));
  std::ofstream(root_ / "huge" / "report.json") << SerializeRunResult(result);
  ProgramResult r = Lockstep({"diff", "good", "huge"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("ranks: 2000000000 is out of range"));
  EXPECT_THAT(r.err, Not(HasSubstr("bad_alloc")));
}

}  // namespace
}  // namespace lockstep
