#include "probe/catalog_expectation.h"
#include "harness/core/testing/build_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::probe {
namespace {

namespace fs = std::filesystem;

Finding MakeFinding(const std::string& checker, int64_t step, std::vector<int> ranks, const std::string& tensor,
                    const std::string& message = "") {
  Finding f;
  f.checker = checker;
  f.step = step;
  f.ranks = std::move(ranks);
  f.tensor = tensor;
  f.tensors = {tensor};
  f.message = message;
  return f;
}

CatalogExpectation ForgotDivide() {
  CatalogExpectation e;
  e.ranks = 3;
  ExpectedFinding f;
  f.checker = "synced_grads";
  f.step = 4;
  f.ranks = std::vector<int>{2};
  f.tensor = "0.weight";
  e.findings.push_back(f);
  e.also = {"replica_weights"};
  return e;
}

TEST(CatalogExpectationTest, MatchesTheExpectedFindingAndAllowedConsequences) {
  const std::vector<Finding> findings = {MakeFinding("synced_grads", 4, {2}, "0.weight"),
                                         MakeFinding("replica_weights", 4, {2}, "0.weight")};
  EXPECT_TRUE(MatchCatalogExpectation(ForgotDivide(), findings).empty());
}

TEST(CatalogExpectationTest, WrongStepRankOrTensorIsNamed) {
  for (const Finding& wrong : {MakeFinding("synced_grads", 5, {2}, "0.weight"),
                               MakeFinding("synced_grads", 4, {1}, "0.weight"),
                               MakeFinding("synced_grads", 4, {2}, "2.bias")}) {
    const std::vector<std::string> problems = MatchCatalogExpectation(ForgotDivide(), {wrong});
    // Missing as expected, and not allowed as it is.
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_NE(problems[0].find("expected synced_grads at step 4 on ranks [2] (0.weight), not reported; got "),
              std::string::npos)
        << problems[0];
    EXPECT_EQ(problems[1].rfind("unexpected finding: synced_grads", 0), 0u) << problems[1];
  }
}

TEST(CatalogExpectationTest, CleanProgramFailsOnAnyFinding) {
  CatalogExpectation clean;
  EXPECT_TRUE(MatchCatalogExpectation(clean, {}).empty());
  const std::vector<std::string> problems =
      MatchCatalogExpectation(clean, {MakeFinding("buffers", 1, {1, 2}, "bn.running_mean", "differ")});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "unexpected finding: buffers at step 1 on ranks [1,2] (bn.running_mean): differ");
}

TEST(CatalogExpectationTest, MessageMustContainTheNamedText) {
  CatalogExpectation e;
  ExpectedFinding f;
  f.checker = "collective_order";
  f.message_contains = {"count 1 vs 2632"};
  e.findings.push_back(f);
  EXPECT_TRUE(MatchCatalogExpectation(e, {MakeFinding("collective_order", 3, {0}, "", "... (count 1 vs 2632)")}).empty());
  const std::vector<std::string> problems =
      MatchCatalogExpectation(e, {MakeFinding("collective_order", 3, {0}, "", "count 2 vs 2632")});
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("message without \"count 1 vs 2632\""), std::string::npos) << problems[0];
}

TEST(CatalogExpectationTest, CauseMustContainTheNamedText) {
  CatalogExpectation e;
  ExpectedFinding f;
  f.checker = "synced_grads";
  f.cause_contains = {"not divided by the world size"};
  e.findings.push_back(f);
  Finding divided = MakeFinding("synced_grads", 4, {2}, "0.weight", "gradients after sync diverge");
  divided.cause = "rank 2's gradients are 3x the others' (...): a sum not divided by the world size (3)";
  EXPECT_TRUE(MatchCatalogExpectation(e, {divided}).empty());
  const Finding without = MakeFinding("synced_grads", 4, {2}, "0.weight", "gradients after sync diverge");
  const std::vector<std::string> problems = MatchCatalogExpectation(e, {without});
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("cause without \"not divided by the world size\" (no cause)"), std::string::npos)
      << problems[0];

  CatalogExpectation none;
  ExpectedFinding g;
  g.checker = "synced_grads";
  g.no_cause = true;
  none.findings.push_back(g);
  EXPECT_TRUE(MatchCatalogExpectation(none, {without}).empty());
  const std::vector<std::string> caused = MatchCatalogExpectation(none, {divided});
  ASSERT_FALSE(caused.empty());
  EXPECT_NE(caused[0].find("a cause (rank 2's gradients"), std::string::npos) << caused[0];
}

TEST(CatalogExpectationTest, ReadsASidecarAndRejectsBadOnes) {
  const fs::path dir = fs::path(testing::TempDir()) / "catalog_expectation_test";
  fs::create_directories(dir);
  std::ofstream(dir / "bug.py") << "print()\n";
  std::ofstream(dir / "bug.expect.json")
      << R"({"ranks": 3, "repeats": 2, "findings": [{"checker": "buffers", "step": 1, "ranks": [1]}], "also": ["crash"]})";
  Result<CatalogExpectation> e = ReadCatalogExpectation(dir / "bug.expect.json");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e.value().program, dir / "bug.py");
  EXPECT_EQ(e.value().ranks, 3);
  EXPECT_EQ(e.value().repeats, 2);
  ASSERT_EQ(e.value().findings.size(), 1u);
  EXPECT_EQ(e.value().findings[0].step, 1);
  EXPECT_EQ(e.value().also, std::vector<std::string>{"crash"});

  std::ofstream(dir / "bad.expect.json") << R"({"findings": []})";
  Result<CatalogExpectation> bad = ReadCatalogExpectation(dir / "bad.expect.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.expect.json"), std::string::npos);
  std::ofstream(dir / "orphan.expect.json") << R"({"ranks": 2, "findings": []})";
  EXPECT_FALSE(ReadCatalogExpectation(dir / "orphan.expect.json").ok());  // no orphan.py
}

TEST(CatalogExpectationTest, LauncherAndTimeouts) {
  const fs::path dir = fs::path(testing::TempDir()) / "catalog_expectation_launcher_test";
  fs::create_directories(dir);
  std::ofstream(dir / "hangs.py") << "print()\n";
  std::ofstream(dir / "hangs.expect.json")
      << R"({"ranks": 2, "launcher": "torchrun", "hang_timeout": 20, "startup_timeout": 30, "findings": []})";
  Result<CatalogExpectation> e = ReadCatalogExpectation(dir / "hangs.expect.json");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e.value().launcher, "torchrun");
  EXPECT_EQ(e.value().hang_timeout_s, 20.0);
  EXPECT_EQ(e.value().startup_timeout_s, 30.0);
  std::ofstream(dir / "hangs.expect.json") << R"({"ranks": 2, "findings": []})";
  e = ReadCatalogExpectation(dir / "hangs.expect.json");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e.value().launcher, "local");
  EXPECT_FALSE(e.value().hang_timeout_s.has_value());
  EXPECT_FALSE(e.value().startup_timeout_s.has_value());
  for (const char* bad : {R"({"ranks": 2, "launcher": "deepspeed", "findings": []})",
                          R"({"ranks": 2, "hang_timeout": 0, "findings": []})",
                          R"({"ranks": 2, "startup_timeout": 0.5, "findings": []})"}) {
    std::ofstream(dir / "hangs.expect.json") << bad;
    Result<CatalogExpectation> rejected = ReadCatalogExpectation(dir / "hangs.expect.json");
    EXPECT_FALSE(rejected.ok()) << bad;
    if (!rejected.ok()) {
      EXPECT_NE(rejected.status().message().find("hangs.expect.json"), std::string::npos);
    }
  }
}

TEST(CatalogExpectationTest, CorpusFields) {
  const fs::path dir = fs::path(testing::TempDir()) / "catalog_expectation_corpus_test" / "real_bugs";
  fs::create_directories(dir);
  std::ofstream(dir / "bug.py") << "print()\n";
  std::ofstream(dir / "bug_fixed.py") << "print()\n";
  std::ofstream(dir / "bug.expect.json") << R"({"ranks": 2, "source": "https://github.com/pytorch/pytorch/issues/1",
      "project": "PyTorch", "class": "skipped_sync", "onset": 1, "best": "synced_grads at step 1",
      "today": "onset", "findings": [{"checker": "synced_grads", "step": 1}]})";
  Result<CatalogExpectation> e = ReadCatalogExpectation(dir / "bug.expect.json");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e.value().source, "https://github.com/pytorch/pytorch/issues/1");
  EXPECT_EQ(e.value().project, "PyTorch");
  EXPECT_EQ(e.value().bug_class, "skipped_sync");
  EXPECT_EQ(e.value().onset, 1);
  EXPECT_EQ(e.value().best, "synced_grads at step 1");
  EXPECT_EQ(e.value().today, "onset");
  // A control of real_bugs/ needs no source.
  std::ofstream(dir / "bug_fixed.expect.json") << R"({"ranks": 2, "findings": []})";
  EXPECT_TRUE(ReadCatalogExpectation(dir / "bug_fixed.expect.json").ok());
  // Each rejection names the file and the field.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"ranks": 2, "findings": []})", "source"},  // a bug of real_bugs/ without its source
      {R"({"ranks": 2, "source": "github.com/x", "findings": []})", "source"},
      {R"({"ranks": 2, "source": "https://x", "class": "weird", "findings": []})", "class \"weird\""},
      {R"({"ranks": 2, "source": "https://x", "onset": -1, "findings": []})", "onset"},
      {R"({"ranks": 2, "source": "https://x", "today": "soon", "findings": []})", "today \"soon\""},
      {R"({"ranks": 2, "source": "https://x", "today": "missed", "findings": [{"checker": "hang"}]})",
       "today \"missed\" but findings are not empty"},
      {R"({"ranks": 2, "source": "https://x", "today": "onset", "findings": []})",
       "today \"onset\" but findings are empty"},
  };
  for (const auto& [text, field] : bad) {
    std::ofstream(dir / "bug.expect.json") << text;
    Result<CatalogExpectation> rejected = ReadCatalogExpectation(dir / "bug.expect.json");
    ASSERT_FALSE(rejected.ok()) << text;
    EXPECT_NE(rejected.status().message().find("bug.expect.json: " + field), std::string::npos)
        << rejected.status().message();
  }
}

TEST(CatalogExpectationTest, TheShippedCatalogReads) {
  Result<std::vector<CatalogExpectation>> catalog = ReadCatalog(fs::path(LOCKSTEP_SOURCE_DIR) / "examples");
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  EXPECT_GE(catalog.value().size(), 6u);
  Result<std::vector<CatalogExpectation>> corpus = ReadCatalog(fs::path(LOCKSTEP_SOURCE_DIR) / "examples" / "real_bugs");
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  EXPECT_GE(corpus.value().size(), 50u);  // 25 bugs or more, each with its control
}

}  // namespace
}  // namespace lockstep::probe
