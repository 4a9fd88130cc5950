#include "harness/runner/lockstep_rank_program.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace lockstep {
namespace {

using Argv = std::vector<std::string>;

const LaunchPaths kPaths{"/o/a/traces", "/o/a/scenario.yaml"};

// The ranks read the resolved scenario file of their launch, never the user's with flags on top.
TEST(LockstepRankProgramTest, EachRunKindHasItsFlagsAndReadsTheResolvedFile) {
  LockstepRankOptions options;
  options.program = "/b/bin/lockstep-rank";
  options.fail_fast = true;
  const LockstepRankProgram program(options);
  Scenario s;
  s.location.file = "scenarios/a.yaml";
  const Argv base = {"/b/bin/lockstep-rank", "--scenario", "/o/a/scenario.yaml", "--trace-dir", "/o/a/traces"};
  auto with = [&base](Argv extra) {
    Argv argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  };
  EXPECT_EQ(program.Invocation(s, RankRun::kMain, kPaths).argv, with({"--fail-fast"}));
  EXPECT_EQ(program.Invocation(s, RankRun::kRepeat, kPaths).argv, with({"--fail-fast"}));
  EXPECT_EQ(program.Invocation(s, RankRun::kReference, kPaths).argv, with({"--reference"}));
  EXPECT_EQ(program.Invocation(s, RankRun::kReferenceSplit, kPaths).argv, with({"--reference-split"}));
  EXPECT_TRUE(program.Invocation(s, RankRun::kMain, kPaths).env.empty());
  EXPECT_FALSE(program.Supports(RankRun::kRepro)) << "repro needs a target";
  EXPECT_TRUE(program.Supports(RankRun::kReference));
  EXPECT_TRUE(program.TakesScenarioFile());
  EXPECT_FALSE(program.MayRunUnobserved());
}

TEST(LockstepRankProgramTest, ReproStopsAtTheStepAndSavesThePatterns) {
  LockstepRankOptions options;
  options.program = "lockstep-rank";
  options.repro = ReproTarget{3, {"param:w0", "grad:w\\*"}, "/o/a/repro/tensors"};
  const LockstepRankProgram program(options);
  ASSERT_TRUE(program.Supports(RankRun::kRepro));
  EXPECT_EQ(program.Invocation(Scenario{}, RankRun::kRepro, {"/o/a/repro/traces", "/o/a/repro/scenario.yaml"}).argv,
            (Argv{"lockstep-rank", "--scenario", "/o/a/repro/scenario.yaml", "--trace-dir", "/o/a/repro/traces",
                  "--stop-after-step", "3", "--dump-tensors", "param:w0,grad:w\\*", "--dump-dir",
                  "/o/a/repro/tensors"}));
}

TEST(LockstepRankProgramTest, ItsLabelIsTheModeAndTheBackend) {
  const LockstepRankProgram program(LockstepRankOptions{});
  Scenario s;
  s.backend = Backend::kGloo;
  s.parallel.mode = ParallelMode::kZero1;
  EXPECT_EQ(program.Label(s).mode, "zero1");
  EXPECT_EQ(program.Label(s).backend, "gloo");
  s.slices = 2;
  EXPECT_EQ(program.Label(s).mode, "zero1/slices=2");
}

// What the trainer cannot run here is decided before a rank starts: a skip where the build or the
// machine lacks a part, an error where the scenario asks for what cannot be.
TEST(LockstepRankProgramTest, RefusesWhatItCannotRunHere) {
  const LockstepRankProgram program(LockstepRankOptions{});
  Scenario s;
  s.backend = Backend::kMpi;
  EXPECT_FALSE(program.Refuses(s, LauncherKind::kMpirun).has_value());
  std::optional<Refusal> local = program.Refuses(s, LauncherKind::kLocal);
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->outcome, Outcome::kError);
  EXPECT_NE(local->reason.find("backend mpi cannot run under --launcher local"), std::string::npos);

  // No GPU: CUDA_VISIBLE_DEVICES hides them all, whatever the machine has.
  const char* saved = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string old = saved ? saved : "";
  setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
  s.device = Device::kCuda;
  std::optional<Refusal> cuda = program.Refuses(s, LauncherKind::kMpirun);
  ASSERT_TRUE(cuda.has_value());
  EXPECT_EQ(cuda->outcome, Outcome::kError);
  EXPECT_NE(cuda->reason.find("device cuda: no GPU is visible"), std::string::npos);
  s.device = Device::kCpu;
  s.backend = Backend::kNccl;
  std::optional<Refusal> nccl = program.Refuses(s, LauncherKind::kMpirun);
  ASSERT_TRUE(nccl.has_value());
  EXPECT_EQ(nccl->outcome, Outcome::kSkipped);
  EXPECT_NE(nccl->reason.find("backend nccl:"), std::string::npos);
  if (saved) setenv("CUDA_VISIBLE_DEVICES", old.c_str(), 1);
  else unsetenv("CUDA_VISIBLE_DEVICES");
}

}  // namespace
}  // namespace lockstep
