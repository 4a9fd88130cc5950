#include "checkers/checker_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "checkers/testing/canned_run.h"

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

}  // namespace
}  // namespace lockstep
