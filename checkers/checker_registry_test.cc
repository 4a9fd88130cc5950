#include "checkers/checker_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "checkers/testing/canned_run.h"
#include "harness/core/testing/build_paths.h"
#include "harness/scenario/injection_kinds.h"
#include "harness/scenario/scenario_loader.h"

namespace lockstep {
namespace {

TEST(CheckerRegistryTest, EveryNamedCheckerExistsUnderItsName) {
  const std::vector<std::string> names = CheckerNames();
  for (const std::string& name : names) {
    EXPECT_EQ(std::count(names.begin(), names.end(), name), 1) << name;
    std::unique_ptr<Checker> c = MakeChecker(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->name(), name);
  }
  EXPECT_EQ(MakeChecker("replica_weight"), nullptr);
}

TEST(CheckerRegistryTest, MakeCheckersKeepsOrderAndTurnsUnknownNamesIntoErrors) {
  auto checkers = MakeCheckers({"finite", "no_such_checker", "hang"});
  ASSERT_EQ(checkers.size(), 3u);
  EXPECT_EQ(checkers[0]->name(), "finite");
  EXPECT_EQ(checkers[1]->name(), "no_such_checker");
  EXPECT_EQ(checkers[2]->name(), "hang");
  testing::CannedRun run(2, 2);
  auto f = checkers[1]->Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].outcome, FindingOutcome::kError);
  EXPECT_EQ(f[0].checker, "no_such_checker");
}

// Every default checker is quiet on a clean run; the opt-in ones that need more input say so.
TEST(CheckerRegistryTest, CleanRunIsQuietForEveryCheckerThatHasItsInputs) {
  testing::CannedRun run(4, 5);
  testing::CannedRun reference(1, 5);
  testing::CannedRun repeat(4, 5);
  CheckContext ctx = run.Context();
  ctx.reference = &reference.traces;
  ctx.repeat = &repeat.traces;
  for (const std::string& name : CheckerNames()) {
    if (name == "golden") continue;  // needs a golden file: golden_checker_test.cc
    auto f = MakeChecker(name)->Check(ctx);
    EXPECT_TRUE(f.empty()) << name << ": " << (f.empty() ? "" : f[0].message);
  }
}

TEST(CheckerRegistryTest, DefaultChecksAddReferenceOnlyWhenComparable) {
  auto has = [](const Scenario& s, const std::string& name) {
    std::vector<std::string> checks = DefaultChecks(s);
    return std::find(checks.begin(), checks.end(), name) != checks.end();
  };
  Scenario two;
  two.ranks = 2;
  EXPECT_TRUE(has(two, "reference"));
  Scenario one;
  one.ranks = 1;
  EXPECT_FALSE(has(one, "reference"));
  Scenario dropout = two;
  dropout.model.dropout = 0.1;
  EXPECT_FALSE(has(dropout, "reference"));
  Scenario batchnorm = two;
  batchnorm.model.norm = NormKind::kBatchNorm;
  EXPECT_FALSE(has(batchnorm, "reference"));
  Scenario injected = two;
  injected.inject.push_back(Injection{});
  EXPECT_FALSE(has(injected, "reference"));
  // Opt-in checks are never defaults; every default is a registered checker.
  EXPECT_FALSE(has(two, "determinism"));
  EXPECT_FALSE(has(two, "golden"));
  for (const std::string& name : DefaultChecks(two)) EXPECT_NE(MakeChecker(name), nullptr) << name;
}

TEST(CheckerRegistryTest, ScenarioDocsNameEveryChecker) {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/docs/SCENARIOS.md");
  ASSERT_TRUE(in) << "docs/SCENARIOS.md is missing";
  std::stringstream buffer;
  buffer << in.rdbuf();
  for (const std::string& checker : CheckerNames()) {
    EXPECT_NE(buffer.str().find("`" + checker + "`"), std::string::npos) << "checker " << checker;
  }
}

// No injection kind is invisible to every checker, in any mode it validates in.
TEST(CheckerRegistryTest, EveryInjectionKindIsSeenBySomeChecker) {
  for (const InjectionKindInfo& kind : kInjectionKinds) {
    for (ParallelMode mode : {ParallelMode::kDdp, ParallelMode::kZero1}) {
      EXPECT_FALSE(CheckersSeeing(SymptomsIn(kind, mode)).empty()) << kind.name << " in " << ToString(mode);
    }
  }
}

// The registry's "sees" and the injection table agree with the catalog: in every injection
// scenario lockstep ships, each checker its `expect: fail` names sees that injection.
TEST(CheckerRegistryTest, EveryExpectedCheckerOfTheCatalogSeesItsInjection) {
  LoadOptions options;
  options.checker_names = CheckerNames();
  options.default_checks = DefaultChecks;
  options.symptoms_seen_by = SymptomsSeenBy;
  options.checkers_seeing = CheckersSeeing;
  std::vector<Diagnostic> diagnostics;
  Result<std::vector<Scenario>> scenarios =
      LoadScenarios({std::string(LOCKSTEP_SOURCE_DIR) + "/scenarios/inject"}, options, &diagnostics);
  ASSERT_TRUE(scenarios.ok()) << (diagnostics.empty() ? scenarios.status().ToString() : diagnostics[0].ToString());
  ASSERT_GE(scenarios->size(), 40u);
  for (const Scenario& s : *scenarios) {
    ASSERT_EQ(s.inject.size(), 1u) << s.name;
    const Symptoms symptoms = SymptomsIn(*FindInjectionKind(s.inject[0].kind), s.parallel.mode);
    const std::vector<std::string> seeing = CheckersSeeing(symptoms);
    for (const ExpectedFinding& expected : s.expect_fail) {
      EXPECT_NE(std::find(seeing.begin(), seeing.end(), expected.checker), seeing.end())
          << s.name << ": " << expected.checker << " is expected to see " << s.inject[0].kind;
    }
  }
}

// The bug class of issue 28: a zero1 shard update corrupted on one rank is copied to every replica
// by the all-gather; the default checks of an injected scenario (no `reference`) cannot see it.
TEST(CheckerRegistryTest, ZeroOneShardCorruptionIsSeenOnlyAgainstACleanRun) {
  Scenario s;
  s.ranks = 4;
  s.parallel.mode = ParallelMode::kZero1;
  s.inject.push_back(Injection{});
  const Symptoms symptoms = SymptomsIn(*FindInjectionKind("wrong_grad_scale"), ParallelMode::kZero1);
  EXPECT_EQ(SymptomsSeenBy(DefaultChecks(s)) & symptoms, symptom::kNone);
  EXPECT_EQ(CheckersSeeing(symptoms), (std::vector<std::string>{"reference", "golden"}));
  // Judged whatever `checks:` lists: a hang and a crash are always seen.
  EXPECT_NE(SymptomsSeenBy({}) & symptom::kRankHangs, symptom::kNone);
  EXPECT_NE(SymptomsSeenBy({}) & symptom::kRankCrashes, symptom::kNone);
}

TEST(CheckerRegistryTest, PropertiesReadBothWays) {
  EXPECT_EQ(CheckerJudging(LaunchEnding::kHang), "hang");
  EXPECT_EQ(CheckerJudging(LaunchEnding::kCrash), "crash");
  EXPECT_EQ(CheckerJudging(LaunchEnding::kStartupTimeout), "startup");
  EXPECT_EQ(CheckerJudging(LaunchEnding::kClean), std::nullopt);
  EXPECT_EQ(TensorKindNamedBy("synced_grads"), TensorKind::kGrad);
  EXPECT_EQ(TensorKindNamedBy("finite"), std::nullopt);
  EXPECT_EQ(InBandCheckerNames(),
            (std::vector<std::string>{"replica_weights", "synced_grads", "optimizer_state", "buffers"}));
  using Runs = std::vector<std::pair<std::string, Companion>>;
  EXPECT_EQ(CompanionRuns({"determinism", "finite", "reference"}),
            (Runs{{"reference", Companion::kReference}, {"reference", Companion::kReferenceSplit},
                  {"determinism", Companion::kRepeat}}));
}

}  // namespace
}  // namespace lockstep
