// The self-test covers every (injection kind, parallel mode) pair that validation accepts: each
// one has its scenario in scenarios/inject/<mode>/<kind>.yaml, and every pair without one is
// refused by validation (so no accepted injection goes untested, or runs as a silent no-op).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/core/testing/build_paths.h"
#include "harness/scenario/injection_kinds.h"
#include "harness/scenario/scenario_loader.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

const fs::path kCatalog = fs::path(LOCKSTEP_SOURCE_DIR) / "scenarios" / "inject";

// A scenario that meets the kind's requirement, so that only the mode decides.
std::string ScenarioText(const InjectionKindInfo& kind, const std::string& mode) {
  const bool transformer = kind.requirement == InjectionRequirement::kTransformer;
  const bool batchnorm = kind.requirement == InjectionRequirement::kBatchNorm;
  const int step = kind.requirement == InjectionRequirement::kOnsetStepZero ? 0 : 3;
  return std::string("ranks: 4\nsteps: 5\n") +
         (transformer ? "model: {kind: transformer}\n" : batchnorm ? "model: {kind: mlp, norm: batchnorm}\n" : "") +
         "parallel: {mode: " + mode + ", grad_accum: 2}\n" +
         "optimizer: {kind: sgd, clip_grad_norm: 0.01}\n" + "inject: [{kind: " + std::string(kind.name) +
         ", rank: 1, step: " + std::to_string(step) + "}]\n";
}

TEST(CatalogCoverageTest, EveryAcceptedKindAndModeHasItsScenario) {
  const testing::TempDir temp("lockstep-catalog-");
  const fs::path& dir = temp.path();
  int accepted = 0;
  for (const InjectionKindInfo& kind : kInjectionKinds) {
    for (const std::string mode : {"ddp", "zero1"}) {
      const fs::path file = dir / (mode + "_" + std::string(kind.name) + ".yaml");
      std::ofstream(file) << ScenarioText(kind, mode);
      std::vector<Diagnostic> diagnostics;
      const bool valid = LoadScenarioFile(file, LoadOptions{}, &diagnostics).ok();
      const fs::path scenario = kCatalog / mode / (std::string(kind.name) + ".yaml");
      if (!valid) {
        EXPECT_FALSE(fs::exists(scenario)) << scenario << " exists, but validation refuses " << kind.name << " in "
                                           << mode;
        continue;
      }
      ++accepted;
      ASSERT_TRUE(fs::exists(scenario)) << kind.name << " is accepted in " << mode << " but the catalog has no "
                                        << scenario;
      Result<Scenario> loaded = LoadScenarioFile(scenario, LoadOptions{}, &diagnostics);
      ASSERT_TRUE(loaded.ok()) << scenario;
      ASSERT_FALSE(loaded->inject.empty());
      EXPECT_EQ(loaded->inject.front().kind, kind.name);
      EXPECT_EQ(ToString(loaded->parallel.mode), mode);
      EXPECT_FALSE(loaded->expect_fail.empty()) << scenario;
    }
  }
  EXPECT_EQ(accepted, 27);  // 14 kinds under ddp, 13 under zero1
}

}  // namespace
}  // namespace lockstep
