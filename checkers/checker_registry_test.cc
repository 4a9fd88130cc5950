#include "checkers/checker_registry.h"

#include <gtest/gtest.h>

#include "checkers/checker_names.h"
#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

TEST(CheckerRegistryTest, EveryNamedCheckerExistsUnderItsName) {
  for (std::string_view name : kCheckerNames) {
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
  for (std::string_view name : kCheckerNames) {
    if (name == "golden") continue;  // needs a golden file: golden_checker_test.cc
    auto f = MakeChecker(name)->Check(ctx);
    EXPECT_TRUE(f.empty()) << name << ": " << (f.empty() ? "" : f[0].message);
  }
}

}  // namespace
}  // namespace lockstep
