#include "harness/diff/run_diff_output.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/diff/testing/canned_traces.h"

namespace lockstep {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::CannedTraces;
using testing::Corrupt;
using testing::FindTensor;

RunDiff Diff(std::vector<ScenarioDiff> scenarios) {
  RunDiff d;
  d.a = "out/mpi";
  d.b = "out/gloo";
  d.scenarios = std::move(scenarios);
  return d;
}

TEST(RunDiffOutputTest, IdenticalSaysSo) {
  const std::string text = RunDiffText(Diff({DiffTraces("clean/ddp_mlp", CannedTraces(2, 3), CannedTraces(2, 3))}));
  EXPECT_THAT(text, HasSubstr("A: out/mpi\nB: out/gloo\n"));
  EXPECT_THAT(text, HasSubstr("clean/ddp_mlp: identical (2 ranks, 4 steps, 58 tensor records compared)\n"));
  EXPECT_THAT(text, HasSubstr("identical: 0 of 1 scenarios in both runs differ, 1 identical\n"));
}

TEST(RunDiffOutputTest, FirstDifferenceNamesStepTensorRanksDigestsAndNorms) {
  auto a = CannedTraces(4, 5);
  auto b = CannedTraces(4, 5);
  Corrupt(b, 1, TensorKind::kParam, "fc2.weight", 3, 0.5);
  Corrupt(b, 2, TensorKind::kParam, "fc2.weight", 3, 0.5);
  Corrupt(b, 0, TensorKind::kGrad, "fc1.bias", 3);
  b[2].steps[3].loss = 1.0;
  RunDiff diff = Diff({DiffTraces("inject/bitflip", a, b)});
  diff.only_in_b = {"new_scenario"};
  const std::string text = RunDiffText(diff);

  // A named string, not a temporary: GCC 13+ (-Wdangling-reference) takes a reference returned
  // by a call with a temporary argument for one into that temporary.
  const std::string fc2 = "fc2.weight";
  const TensorRecord& ra = FindTensor(a, 1, 3, TensorKind::kParam, fc2);
  const TensorRecord& rb = FindTensor(b, 1, 3, TensorKind::kParam, fc2);
  EXPECT_THAT(text, HasSubstr("inject/bitflip: DIFFERENT from step 3 (3 of 6 compared steps differ, the last at step 5)\n"
                              "  first difference at step 3:\n"
                              "    loss differs on ranks [2]:\n"
                              "      rank 2: 0.625 (A) vs 1 (B), absolute difference 0.375, relative 0.375\n"
                              "    tensor fc2.weight (param) differs on ranks [1, 2]:\n"
                              "      rank 1: digest " +
                              ra.digest.ToHex() + " (A) vs " + rb.digest.ToHex() +
                              " (B); norm 3.375 vs 5.0625, relative difference 0.333\n"));
  EXPECT_THAT(text, HasSubstr("    also different at step 3 (1 more tensor): fc1.bias (grad) ranks [0]\n"));
  EXPECT_THAT(text, HasSubstr("only in B: new_scenario\n"));
  EXPECT_THAT(text, HasSubstr("DIFFERENT: 1 of 1 scenarios in both runs differ, 0 identical\n"));
}

TEST(RunDiffOutputTest, LongListsAreCapped) {
  const auto a = CannedTraces(12, 1);
  auto b = CannedTraces(12, 1);
  for (int r = 0; r < 12; ++r) Corrupt(b, r, TensorKind::kParam, "fc1.weight", 1);
  const std::string text = RunDiffText(Diff({DiffTraces("big", a, b)}));
  EXPECT_THAT(text, HasSubstr("      rank 7: "));
  EXPECT_THAT(text, Not(HasSubstr("      rank 8: ")));
  EXPECT_THAT(text, HasSubstr("      ... and 4 more ranks\n"));
}

TEST(RunDiffOutputTest, RanksThatDifferTheSameWayShareALine) {
  auto a = CannedTraces(4, 2);
  auto b = CannedTraces(4, 2);
  // The same new value on every rank, as a gloo run against an mpi run gives; rank 3 differs more.
  for (int r = 0; r < 4; ++r) {
    FindTensor(b, r, 1, TensorKind::kParam, "fc1.bias").digest = Digest128{1, 2};
    FindTensor(b, r, 1, TensorKind::kParam, "fc1.bias").norm = 2.5;
    b[r].steps[1].loss = r == 3 ? 2.0 : 1.0;
  }
  FindTensor(b, 3, 1, TensorKind::kParam, "fc1.bias").digest = Digest128{3, 4};
  const std::string text = RunDiffText(Diff({DiffTraces("gloo", a, b)}));
  EXPECT_THAT(text, HasSubstr("    loss differs on ranks [0, 1, 2, 3]:\n"
                              "      ranks [0, 1, 2]: 1.25 (A) vs 1 (B), absolute difference 0.25, relative 0.2\n"
                              "      rank 3: 1.25 (A) vs 2 (B), absolute difference 0.75, relative 0.375\n"));
  EXPECT_THAT(text, HasSubstr("      ranks [0, 1, 2]: digest "));
  EXPECT_THAT(text, HasSubstr("00000000000000010000000000000002 (B); norm 2.125 vs 2.5, relative difference 0.15\n"
                              "      rank 3: digest "));
}

TEST(RunDiffOutputTest, GapsAndNotes) {
  const auto a = CannedTraces(2, 4);
  auto b = CannedTraces(2, 4);
  testing::Cut(b, 0, 1);
  const std::string text = RunDiffText(Diff({DiffTraces("crashy", a, b)}));
  EXPECT_THAT(text, HasSubstr("    rank 0 has no step 2 in B (its last step there is 1)\n"
                              "    loss: the same on every rank that recorded the step\n"
                              "    tensors: every tensor the same\n"));
  EXPECT_THAT(text, HasSubstr("  note: B rank 0: trace without a footer (the rank did not exit cleanly)\n"));
}

// Steps one run lacks differ without being compared: "4 of 2 compared steps differ" counted them
// among the compared ones.
TEST(RunDiffOutputTest, StepsInOneRunOnlyAreCountedApartFromTheComparedOnes) {
  const auto a = CannedTraces(1, 6);
  auto b = CannedTraces(1, 6);
  ASSERT_TRUE(b[0].footer.has_value());
  b[0].steps.resize(2);  // B's rank finished cleanly, with fewer steps
  const ScenarioDiff d = DiffTraces("short", a, b);
  ASSERT_GT(d.differing_steps, d.steps_compared) << "the case of the bug";
  const std::string text = RunDiffText(Diff({d}));
  EXPECT_THAT(text, HasSubstr("(0 of 2 compared steps differ; " + std::to_string(d.differing_steps) +
                              " steps recorded in one run only"))
      << text;
  EXPECT_EQ(RunDiffToJson(Diff({d}))["scenarios"][0]["steps_in_one_run"], d.differing_steps);
}

TEST(RunDiffOutputTest, JsonForMachines) {
  auto a = CannedTraces(2, 3);
  auto b = CannedTraces(2, 3);
  Corrupt(b, 1, TensorKind::kParam, "fc1.bias", 2);
  b[0].steps[2].loss = std::nan("");  // NaN against a number: null in JSON
  ScenarioDiff skipped;
  skipped.id = "nccl";
  skipped.no_traces_in = "both";
  RunDiff diff = Diff({DiffTraces("x", a, b), skipped});
  diff.only_in_a = {"old"};

  const nlohmann::ordered_json j = RunDiffToJson(diff);
  EXPECT_EQ(j["schema"], "lockstep.diff/1");
  EXPECT_EQ(j["identical"], false);
  EXPECT_EQ(j["summary"]["different"], 1);
  EXPECT_EQ(j["summary"]["not_compared"], 1);
  EXPECT_EQ(j["only_in_a"], nlohmann::ordered_json::array({"old"}));
  const auto& x = j["scenarios"][0];
  EXPECT_EQ(x["verdict"], "different");
  EXPECT_EQ(x["differing_steps"], 2);
  const auto& first = x["first_difference"];
  EXPECT_EQ(first["step"], 2);
  EXPECT_EQ(first["losses"][0]["rank"], 0);
  EXPECT_TRUE(first["losses"][0]["b"].is_null());
  EXPECT_TRUE(first["losses"][0]["rel_diff"].is_null());
  EXPECT_EQ(first["tensors"][0]["name"], "fc1.bias");
  EXPECT_EQ(first["tensors"][0]["kind"], "param");
  EXPECT_EQ(first["tensors"][0]["ranks"], nlohmann::ordered_json::array({1}));
  EXPECT_EQ(first["tensors"][0]["per_rank"][0]["a"]["digest"].get<std::string>().size(), 32u);
  EXPECT_EQ(j["scenarios"][1]["verdict"], "not_compared");
  EXPECT_EQ(j["scenarios"][1]["no_traces_in"], "both");
  EXPECT_TRUE(j["scenarios"][1]["first_difference"].is_null());
}

}  // namespace
}  // namespace lockstep
