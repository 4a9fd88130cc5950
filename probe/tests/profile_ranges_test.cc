// A torch profile of a program under the probe says which microseconds are the probe's: the GPU
// run's cost check (ci/gpu-checks.sh, issue 49) profiles ci/gpu-ddp-step.py bare and under
// `lockstep exec` and splits the difference with ci/gpu-profile-breakdown.py. Here the same
// program runs on the CPU over gloo (DDP_STEP_DEVICE=cpu), so the probe's ranges (probe.py's
// _guard, the recording backend) and the breakdown's reading of a real trace are checked on every
// CI run, not only on a lent GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"

namespace lockstep::probe {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kSource = LOCKSTEP_SOURCE_DIR;

// A small model and few steps: the ranges are what is checked, not the times.
std::vector<std::string> SmallSteps(const fs::path& profile) {
  return {"DDP_STEP_DEVICE=cpu", "DDP_STEP_WIDTH=64",  "DDP_STEP_BATCH=16",
          "DDP_STEP_STEPS=2",    "DDP_STEP_WARMUP=1", "DDP_STEP_PROFILE_STEPS=3",
          "DDP_STEP_PROFILE=" + profile.string()};
}

testing::ProgramResult Breakdown(const fs::path& without, const fs::path& with) {
  return testing::RunProgram("/usr/bin/env",
                             {"python3", (kSource / "ci/gpu-profile-breakdown.py").string(), "--without",
                              without.string(), "--with", with.string()},
                             kSource);
}

TEST(ProfileRangesTest, TheProbesWorkIsNamedInAProfileAndABareRunHasNone) {
  const fs::path out = testing::FreshOutDir("profile_ranges_test", "ddp_step");
  fs::create_directories(out);
  const fs::path bare = out / "none.json", probed = out / "probe.json";
  std::vector<std::string> args = SmallSteps(bare);
  args.insert(args.end(), {LOCKSTEP_PROBE_PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                           "2", (kSource / "ci/gpu-ddp-step.py").string()});
  const testing::ProgramResult r = testing::RunProgram("/usr/bin/env", args, kSource);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("ddp-step {"));

  args = SmallSteps(probed);
  args.insert(args.end(), {testing::LockstepBinary().string(), "exec", "--ranks", "2", "--launcher", "local",
                           "--recorders", "none", "--out", (out / "run").string(), "--", LOCKSTEP_PROBE_PYTHON,
                           (kSource / "ci/gpu-ddp-step.py").string()});
  const testing::ProgramResult e = testing::RunProgram("/usr/bin/env", args, kSource);
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;

  // Fires: the probed trace has the probe's ranges, so the breakdown finds lockstep's time.
  const testing::ProgramResult with = Breakdown(bare, probed);
  ASSERT_EQ(with.exit_code, 0) << with.out << with.err;
  EXPECT_THAT(with.out, HasSubstr("\"steps\": [3, 3]"));
  EXPECT_THAT(with.out, ::testing::ContainsRegex("\"lockstep_us\": [1-9][0-9]*\\.[0-9]"));
  // Quiet: the bare trace against itself has none.
  const testing::ProgramResult quiet = Breakdown(bare, bare);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.out << quiet.err;
  EXPECT_THAT(quiet.out, HasSubstr("\"lockstep_us\": 0.0"));
}

}  // namespace
}  // namespace lockstep::probe
