#include "harness/runner/lockstep_rank_program.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

using Argv = std::vector<std::string>;

Scenario FromFile(const std::string& file) {
  Scenario s;
  s.location.file = file;
  return s;
}

TEST(LockstepRankProgramTest, EachRunKindHasItsFlags) {
  LockstepRankOptions options;
  options.program = "/b/bin/lockstep-rank";
  options.backend = Backend::kGloo;
  options.fail_fast = true;
  const LockstepRankProgram program(options);
  const Scenario s = FromFile("scenarios/a.yaml");
  const Argv base = {"/b/bin/lockstep-rank", "--scenario", "scenarios/a.yaml", "--trace-dir", "/o/a/traces",
                     "--backend", "gloo"};
  auto with = [&base](Argv extra) {
    Argv argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  };
  EXPECT_EQ(program.Invocation(s, RankRun::kMain, "/o/a/traces").argv, with({"--fail-fast"}));
  EXPECT_EQ(program.Invocation(s, RankRun::kRepeat, "/o/a/traces").argv, with({"--fail-fast"}));
  EXPECT_EQ(program.Invocation(s, RankRun::kReference, "/o/a/traces").argv, with({"--reference"}));
  EXPECT_EQ(program.Invocation(s, RankRun::kReferenceSplit, "/o/a/traces").argv, with({"--reference-split"}));
  EXPECT_TRUE(program.Invocation(s, RankRun::kMain, "/o/a/traces").env.empty());
  EXPECT_FALSE(program.Supports(RankRun::kRepro)) << "repro needs a target";
  EXPECT_TRUE(program.Supports(RankRun::kReference));
}

// `run --device` and `--ranks` reach every run's ranks: a reference-split splits the batch the
// way the overridden world size does.
TEST(LockstepRankProgramTest, DeviceAndRanksOverridesReachEveryRun) {
  LockstepRankOptions options;
  options.program = "lockstep-rank";
  options.device = Device::kCuda;
  options.ranks = 3;
  const LockstepRankProgram program(options);
  for (RankRun run : {RankRun::kMain, RankRun::kRepeat, RankRun::kReference, RankRun::kReferenceSplit}) {
    const Argv argv = program.Invocation(FromFile("a.yaml"), run, "/t").argv;
    const Argv head(argv.begin(), argv.begin() + 9);
    EXPECT_EQ(head, (Argv{"lockstep-rank", "--scenario", "a.yaml", "--trace-dir", "/t", "--device", "cuda", "--ranks",
                          "3"}));
  }
}

TEST(LockstepRankProgramTest, ReproStopsAtTheStepAndSavesThePatterns) {
  LockstepRankOptions options;
  options.program = "lockstep-rank";
  options.repro = ReproTarget{3, {"param:w0", "grad:w\\*"}, "/o/a/repro/tensors"};
  const LockstepRankProgram program(options);
  ASSERT_TRUE(program.Supports(RankRun::kRepro));
  EXPECT_EQ(program.Invocation(FromFile("a.yaml"), RankRun::kRepro, "/o/a/repro/traces").argv,
            (Argv{"lockstep-rank", "--scenario", "a.yaml", "--trace-dir", "/o/a/repro/traces", "--stop-after-step", "3",
                  "--dump-tensors", "param:w0,grad:w\\*", "--dump-dir", "/o/a/repro/tensors"}));
}

}  // namespace
}  // namespace lockstep
