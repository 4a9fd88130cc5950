#include "checkers/golden_checker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "checkers/golden_file.h"
#include "checkers/testing/canned_run.h"
#include "harness/core/testing/build_paths.h"
#include "harness/trace/trace_reader.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

using testing::CannedRun;

const std::filesystem::path kFixtures = std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "fixtures";
const char* kPlatform = "libtorch-1.13.0_mpi_cpu-AMD EPYC 7B13";

class GoldenCheckerTest : public ::testing::Test {
 protected:
  CheckContext Context(CannedRun& run) {
    CheckContext ctx = run.Context();
    ctx.fixtures_dir = dir_;
    ctx.platform = kPlatform;
    return ctx;
  }

  testing::TempDir temp_{"lockstep_golden_"};
  const std::filesystem::path dir_ = temp_.path();
};

TEST_F(GoldenCheckerTest, PathIsKeyedByScenarioAndPlatform) {
  EXPECT_EQ(GoldenPath("/f", "ddp/mlp_basic", "libtorch-1.13.0_mpi_cpu-AMD EPYC 7B13"),
            std::filesystem::path("/f/golden/ddp/mlp_basic/libtorch-1.13.0_mpi_cpu-AMD_EPYC_7B13.json"));
  EXPECT_EQ(GoldenPath("/f", "../x", "a/b"), std::filesystem::path("/f/golden/_../x/a_b.json"));
}

TEST_F(GoldenCheckerTest, MissingGoldenFileIsAnErrorWithAHint) {
  CannedRun run(2, 3);
  auto f = GoldenChecker().Check(Context(run));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].outcome, FindingOutcome::kError);
  EXPECT_NE(f[0].message.find("lockstep bless"), std::string::npos) << f[0].message;
}

TEST_F(GoldenCheckerTest, QuietRightAfterBlessing) {
  CannedRun run(2, 3);
  ASSERT_TRUE(WriteGolden(dir_, run.scenario.name, kPlatform, run.traces).ok());
  EXPECT_TRUE(GoldenChecker().Check(Context(run)).empty());
}

TEST_F(GoldenCheckerTest, GoldenFileRoundTrips) {
  CannedRun run(2, 3);
  auto g = MakeGolden(run.traces, "canned", kPlatform);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(WriteGolden(dir_, "canned", kPlatform, run.traces).ok());
  auto back = ReadGolden(GoldenPath(dir_, "canned", kPlatform));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->final_step, 3);
  EXPECT_EQ(back->loss.size(), 4u);
  EXPECT_TRUE(std::isnan(back->loss.at(0)));
  EXPECT_EQ(back->loss.at(2), g->loss.at(2));
  ASSERT_EQ(back->final_tensors.size(), g->final_tensors.size());
  EXPECT_EQ(back->final_tensors[4].kind, TensorKind::kGrad);
  EXPECT_EQ(back->final_tensors[4].digest, g->final_tensors[4].digest);
}

// Every non-finite value comes back as itself: an infinite loss is not turned into NaN.
TEST_F(GoldenCheckerTest, NonFiniteValuesRoundTrip) {
  GoldenRecord g;
  g.scenario_id = "s";
  g.platform = kPlatform;
  g.loss = {{0, std::nan("")}, {1, std::numeric_limits<double>::infinity()},
            {2, -std::numeric_limits<double>::infinity()}, {3, 0.5}};
  g.final_step = 3;
  g.final_tensors.push_back({TensorKind::kParam, "w", Digest128{1, 2}, std::numeric_limits<double>::infinity()});
  const std::string text = GoldenToJson(g);
  EXPECT_NE(text.find("\"Infinity\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"-Infinity\""), std::string::npos) << text;
  const std::filesystem::path path = dir_ / "g.json";
  std::filesystem::create_directories(dir_);
  std::ofstream(path) << text;
  auto back = ReadGolden(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(std::isnan(back->loss.at(0)));
  EXPECT_EQ(back->loss.at(1), std::numeric_limits<double>::infinity());
  EXPECT_EQ(back->loss.at(2), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(back->loss.at(3), 0.5);
  EXPECT_EQ(back->final_tensors.at(0).norm, std::numeric_limits<double>::infinity());
}

TEST_F(GoldenCheckerTest, ALossThatMovedIsNamedByStep) {
  CannedRun run(2, 5);
  ASSERT_TRUE(WriteGolden(dir_, run.scenario.name, kPlatform, run.traces).ok());
  for (int r = 0; r < 2; ++r) run.Step(r, 3).loss = std::nextafter(run.Step(r, 3).loss, 10.0);
  auto f = GoldenChecker().Check(Context(run));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].outcome, FindingOutcome::kFail);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_NE(f[0].message.find("loss at step 3"), std::string::npos) << f[0].message;

  run.scenario.tolerances.golden_rtol = 1e-9;
  EXPECT_TRUE(GoldenChecker().Check(Context(run)).empty());
}

TEST_F(GoldenCheckerTest, AFinalDigestThatChangedIsNamedByTensor) {
  CannedRun run(2, 4);
  ASSERT_TRUE(WriteGolden(dir_, run.scenario.name, kPlatform, run.traces).ok());
  for (int r = 0; r < 2; ++r) run.Diverge(r, TensorKind::kParam, "w1", 4, 1e-12);
  auto f = GoldenChecker().Check(Context(run));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 4);
  EXPECT_EQ(f[0].tensor, "w1");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  // With a tolerance the norms are compared instead, and these agree to 1e-12.
  run.scenario.tolerances.golden_rtol = 1e-9;
  EXPECT_TRUE(GoldenChecker().Check(Context(run)).empty());
}

TEST_F(GoldenCheckerTest, NoPlatformIsAnError) {
  CannedRun run(2, 2);
  CheckContext ctx = Context(run);
  ctx.platform.clear();
  auto f = GoldenChecker().Check(ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].outcome, FindingOutcome::kError);
}

// A golden mean loss from a cut or missing trace would average fewer ranks than the run had.
TEST_F(GoldenCheckerTest, BlessingRefusesTruncatedOrMissingTraces) {
  auto cut = ReadTraceDir(kFixtures / "traces" / "truncated_rank1_step3", 2);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  Status written = WriteGolden(dir_, "cut", kPlatform, *cut);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find("cannot bless cut: rank 1 did not finish its trace"), std::string::npos)
      << written.message();
  EXPECT_FALSE(std::filesystem::exists(GoldenPath(dir_, "cut", kPlatform)));

  CannedRun run(3, 3);
  run.traces[2] = RankTrace{};
  run.traces[2].missing = true;
  run.traces[2].truncation_note = "rank-2.trace: missing";
  Result<GoldenRecord> g = MakeGolden(run.traces, "m", kPlatform);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("rank 2 did not finish its trace (rank-2.trace: missing)"), std::string::npos)
      << g.status().message();
}

TEST_F(GoldenCheckerTest, AGoldenFileWithANonIntegerStepOrDeepNestingIsAnError) {
  std::filesystem::create_directories(dir_);
  const std::string head = R"({"schema": "lockstep.golden/1", "scenario": "s", "platform": "p", )";
  for (const std::string step : {"3.5", "null", "1e300"}) {
    std::ofstream(dir_ / "g.json") << head << R"("loss": [{"step": )" << step
                                   << R"(, "loss": 1.0}], "final_step": 1, "final_tensors": []})";
    Result<GoldenRecord> g = ReadGolden(dir_ / "g.json");
    ASSERT_FALSE(g.ok()) << step;
    EXPECT_NE(g.status().message().find("loss[].step: expected an integer"), std::string::npos) << g.status().message();
  }
  std::ofstream(dir_ / "g.json") << head << R"("loss": )" << std::string(100000, '[') << std::string(100000, ']') << "}";
  Result<GoldenRecord> deep = ReadGolden(dir_ / "g.json");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nested deeper than 64 levels"), std::string::npos) << deep.status().message();
}

TEST_F(GoldenCheckerTest, CommittedGoldenOfTheCleanFixtureMatches) {
  auto traces = ReadTraceDir(kFixtures / "traces" / "clean_4rank", 4);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  Scenario scenario;
  scenario.name = "fixture_clean_4rank";
  scenario.ranks = 4;
  LaunchReport launch;
  CheckContext ctx{scenario, *traces, launch};
  ctx.fixtures_dir = kFixtures;
  ctx.platform = "libtorch-1.13.0_mpi_cpu-canned";
  EXPECT_TRUE(GoldenChecker().Check(ctx).empty());

  // The committed file is exactly what WriteGolden writes today: the format is pinned.
  auto g = MakeGolden(*traces, scenario.name, ctx.platform);
  ASSERT_TRUE(g.ok());
  std::ifstream in(GoldenPath(kFixtures, scenario.name, ctx.platform));
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_EQ(committed.str(), GoldenToJson(*g));

  auto diverged = ReadTraceDir(kFixtures / "traces" / "rank2_diverges_at_step3", 4);
  ASSERT_TRUE(diverged.ok());
  CheckContext bad{scenario, *diverged, launch};
  bad.fixtures_dir = kFixtures;
  bad.platform = ctx.platform;
  auto f = GoldenChecker().Check(bad);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].step, 4);  // the mean loss moves one step after the weights
  EXPECT_EQ(f[1].step, 5);
  EXPECT_EQ(f[1].ranks, (std::vector<int>{2}));
  EXPECT_EQ(f[1].tensor, "fc1.weight");
}

}  // namespace
}  // namespace lockstep
