#include "harness/repro/tensor_compare.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "harness/rank/tensor_dump.h"
#include "harness/repro/tensor_compare_output.h"
#include "harness/repro/tensor_dump_reader.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// 0.5f with bit 22 flipped is 0.75f: the bitflip injection's default bit.
torch::Tensor Flipped(torch::Tensor t, int64_t flat_index, int bit = 22) {
  torch::Tensor c = t.clone();
  torch::Tensor bits = c.view({-1}).view(torch::kInt32);
  bits.index_put_({flat_index}, bits.index({flat_index}).bitwise_xor(static_cast<int32_t>(1u << bit)));
  return c;
}

TEST(TensorCompareTest, IdenticalCopiesDoNotDiffer) {
  torch::Tensor w = torch::randn({4, 3});
  TensorComparison c = CompareAcrossRanks({{0, w}, {1, w.clone()}, {2, w.clone()}});
  EXPECT_TRUE(c.compared);
  EXPECT_FALSE(c.Differs());
  EXPECT_EQ(c.ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(c.reference_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(c.majority);
  EXPECT_EQ(c.differing_elements, 0);
  EXPECT_EQ(c.dtype, "float32");
  EXPECT_EQ(c.shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(c.numel, 12);
  EXPECT_TRUE(c.first_differences.empty());
}

TEST(TensorCompareTest, OneFlippedBitOnOneRankIsOneElementAgainstTheMajority) {
  torch::Tensor w = torch::full({4, 3}, 0.5f);
  // Flat index 7 is [2, 1].
  TensorComparison c = CompareAcrossRanks({{2, w.clone()}, {0, w.clone()}, {1, Flipped(w, 7)}});
  ASSERT_TRUE(c.Differs());
  EXPECT_EQ(c.reference_ranks, (std::vector<int>{0, 2}));
  EXPECT_TRUE(c.majority);
  ASSERT_EQ(c.differing_ranks.size(), 1u);
  const RankDifference& d = c.differing_ranks[0];
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.differing_elements, 1);
  EXPECT_DOUBLE_EQ(d.max_abs_diff, 0.25);
  EXPECT_DOUBLE_EQ(d.max_rel_diff, 0.5);
  EXPECT_EQ(c.differing_elements, 1);
  EXPECT_DOUBLE_EQ(c.max_abs_diff, 0.25);
  ASSERT_EQ(c.first_differences.size(), 1u);
  const ElementDifference& e = c.first_differences[0];
  EXPECT_EQ(e.flat_index, 7);
  EXPECT_EQ(e.index, (std::vector<int64_t>{2, 1}));
  ASSERT_EQ(e.values.size(), 3u);
  EXPECT_EQ(e.values[0].rank, 0);
  EXPECT_EQ(e.values[0].value, 0.5);
  EXPECT_EQ(e.values[0].text, "0.5 (0x3f000000)");
  EXPECT_EQ(e.values[1].rank, 1);
  EXPECT_EQ(e.values[1].value, 0.75);
  EXPECT_EQ(e.values[1].text, "0.75 (0x3f400000)");
  EXPECT_EQ(e.values[2].rank, 2);
  EXPECT_EQ(e.values[2].value, 0.5);
}

TEST(TensorCompareTest, WithoutAMajorityTheLowestRanksGroupIsTheReference) {
  torch::Tensor w = torch::full({3}, 0.5f);
  TensorComparison c = CompareAcrossRanks({{1, Flipped(w, 0)}, {0, w}});
  ASSERT_TRUE(c.Differs());
  EXPECT_FALSE(c.majority);
  EXPECT_EQ(c.reference_ranks, (std::vector<int>{0}));
  ASSERT_EQ(c.differing_ranks.size(), 1u);
  EXPECT_EQ(c.differing_ranks[0].rank, 1);
}

TEST(TensorCompareTest, CountsDifferingElementsPerRankAndInAll) {
  torch::Tensor w = torch::full({10}, 0.5f);
  torch::Tensor r2 = Flipped(Flipped(w, 3), 9);
  TensorComparison c = CompareAcrossRanks({{0, w}, {1, w}, {2, r2}, {3, Flipped(w, 3)}, {4, w}},
                                          CompareOptions{/*max_indices=*/1});
  ASSERT_EQ(c.differing_ranks.size(), 2u);
  EXPECT_EQ(c.differing_ranks[0].rank, 2);
  EXPECT_EQ(c.differing_ranks[0].differing_elements, 2);
  EXPECT_EQ(c.differing_ranks[1].rank, 3);
  EXPECT_EQ(c.differing_ranks[1].differing_elements, 1);
  EXPECT_EQ(c.differing_elements, 2);  // elements 3 and 9
  ASSERT_EQ(c.first_differences.size(), 1u);  // capped, first in row-major order
  EXPECT_EQ(c.first_differences[0].flat_index, 3);
  EXPECT_EQ(c.first_differences[0].values.size(), 5u);
}

TEST(TensorCompareTest, ComparesBitsNotValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Identical NaNs are no difference; -0.0 against 0.0 is one, of size zero.
  TensorComparison same_nan = CompareAcrossRanks({{0, torch::tensor({nan, 1.0f})}, {1, torch::tensor({nan, 1.0f})}});
  EXPECT_FALSE(same_nan.Differs());

  TensorComparison zero = CompareAcrossRanks({{0, torch::tensor({0.0f, 1.0f})}, {1, torch::tensor({-0.0f, 1.0f})}});
  ASSERT_TRUE(zero.Differs());
  EXPECT_EQ(zero.differing_elements, 1);
  EXPECT_EQ(zero.max_abs_diff, 0.0);
  EXPECT_EQ(zero.max_rel_diff, 0.0);

  TensorComparison to_nan = CompareAcrossRanks({{0, torch::tensor({2.0f, 1.0f})}, {1, torch::tensor({nan, 1.0f})}});
  EXPECT_EQ(to_nan.differing_elements, 1);
  EXPECT_EQ(to_nan.max_abs_diff, kInf);
  EXPECT_EQ(to_nan.max_rel_diff, kInf);

  TensorComparison from_zero = CompareAcrossRanks(
      {{0, torch::tensor({0.0, 4.0}, torch::kFloat64)}, {1, torch::tensor({1e-3, 4.0}, torch::kFloat64)}});
  EXPECT_DOUBLE_EQ(from_zero.max_abs_diff, 1e-3);
  EXPECT_EQ(from_zero.max_rel_diff, kInf);
  ASSERT_EQ(from_zero.first_differences.size(), 1u);
  EXPECT_EQ(from_zero.first_differences[0].values[1].text, "0.001 (0x3f50624dd2f1a9fc)");
}

TEST(TensorCompareTest, IntegerAndBoolTensors) {
  TensorComparison ints = CompareAcrossRanks(
      {{0, torch::tensor({5, 7}, torch::kInt64)}, {1, torch::tensor({5, 7}, torch::kInt64)},
       {2, torch::tensor({5, -3}, torch::kInt64)}});
  ASSERT_EQ(ints.differing_ranks.size(), 1u);
  EXPECT_EQ(ints.differing_ranks[0].max_abs_diff, 10.0);
  EXPECT_EQ(ints.first_differences[0].values[2].text, "-3");

  TensorComparison bools = CompareAcrossRanks({{0, torch::tensor({true, false})}, {1, torch::tensor({true, true})}});
  EXPECT_EQ(bools.differing_elements, 1);
  EXPECT_EQ(bools.first_differences[0].values[1].text, "true");
}

TEST(TensorCompareTest, AnotherShapeOrDtypeIsAProblemNotAnElementCount) {
  TensorComparison c = CompareAcrossRanks(
      {{0, torch::zeros({2, 3})}, {1, torch::zeros({2, 3})}, {2, torch::zeros({3, 2})}, {3, torch::zeros({2, 3}, torch::kFloat64)}});
  ASSERT_TRUE(c.Differs());
  ASSERT_EQ(c.differing_ranks.size(), 2u);
  EXPECT_NE(c.differing_ranks[0].problem.find("[3, 2]"), std::string::npos) << c.differing_ranks[0].problem;
  EXPECT_NE(c.differing_ranks[1].problem.find("float64"), std::string::npos) << c.differing_ranks[1].problem;
  EXPECT_EQ(c.differing_elements, 0);
}

TEST(TensorCompareTest, ASingleCopyIsNotCompared) {
  TensorComparison c = CompareAcrossRanks({{3, torch::zeros({2})}});
  EXPECT_FALSE(c.compared);
  EXPECT_FALSE(c.Differs());
  EXPECT_NE(c.not_compared_reason.find("rank 3"), std::string::npos);
}

// A dump as three ranks write it, read back and compared, in text and JSON.
class TensorDumpCompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::Tensor w = torch::full({4, 2}, 0.5f);
    torch::Tensor b = torch::arange(3, torch::kFloat32);
    for (int rank = 0; rank < 3; ++rank) {
      std::vector<DumpTensor> tensors = {
          {"blocks.0.linear.weight", TensorKind::kParam, rank == 1 ? Flipped(w, 5) : w, true},
          {"blocks.0.linear.bias", TensorKind::kParam, b, true},
          {"blocks.0.linear.weight#exp_avg", TensorKind::kOptimizerState, torch::full({2}, float(rank)), false},
      };
      if (rank == 2) tensors.pop_back();
      ASSERT_TRUE(WriteTensorDump(dir_, rank, 3, tensors).ok());
    }
  }
  testing::TempDir temp_{"lockstep_tensor_compare_test_"};
  const std::filesystem::path dir_ = temp_ / "dump";
};

TEST_F(TensorDumpCompareTest, NamesTheTensorTheRankAndTheElement) {
  Result<TensorDumpContents> dump = ReadTensorDump(dir_);
  ASSERT_TRUE(dump.ok()) << dump.status().ToString();
  EXPECT_EQ(dump->step, 3);
  ASSERT_EQ(dump->ranks.size(), 3u);
  EXPECT_EQ(dump->ranks[1].tensors.size(), 3u);

  TensorDumpComparison c = CompareTensorDump(*dump);
  EXPECT_EQ(c.ranks, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.tensors[0].Key(), "param:blocks.0.linear.weight");
  EXPECT_TRUE(c.tensors[0].Differs());
  EXPECT_EQ(c.tensors[0].differing_elements, 1);
  EXPECT_EQ(c.tensors[0].first_differences.at(0).index, (std::vector<int64_t>{2, 1}));
  EXPECT_FALSE(c.tensors[1].Differs());
  // Each rank's own shard: listed, not compared, and its absence on rank 2 is no difference.
  EXPECT_FALSE(c.tensors[2].compared);
  EXPECT_FALSE(c.tensors[2].Differs());
  EXPECT_EQ(c.tensors[2].missing_ranks, (std::vector<int>{2}));
  EXPECT_EQ(c.DifferingCount(), 1);

  const std::string text = TensorComparisonText(c);
  EXPECT_NE(text.find("tensors saved after step 3 by ranks 0, 1, 2"), std::string::npos) << text;
  EXPECT_NE(text.find("param:blocks.0.linear.weight  float32 [4, 2]\n"
                      "  rank 1 differs from the majority, ranks 0, 2\n"
                      "  rank 1: 1 differing element of 8, max abs diff 0.25, max rel diff 0.5\n"
                      "  first differing index:\n"
                      "    [2, 1]:  rank 0 0.5 (0x3f000000)  rank 1 0.75 (0x3f400000)  rank 2 0.5 (0x3f000000)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("param:blocks.0.linear.bias  float32 [3]: identical on ranks 0, 1, 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("optimizer_state:blocks.0.linear.weight#exp_avg  float32 [2]: not compared (not replicated"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1 of 2 tensors differ across ranks\n"), std::string::npos) << text;

  const nlohmann::ordered_json j = TensorComparisonJson(c);
  EXPECT_EQ(j["schema"], "lockstep.tensor_compare/1");
  EXPECT_EQ(j["step"], 3);
  EXPECT_EQ(j["differing_tensors"], 1);
  const auto& t = j["tensors"][0];
  EXPECT_EQ(t["key"], "param:blocks.0.linear.weight");
  EXPECT_EQ(t["differs"], true);
  EXPECT_EQ(t["differing_elements"], 1);
  EXPECT_EQ(t["differing_ranks"][0]["rank"], 1);
  EXPECT_EQ(t["differing_ranks"][0]["max_abs_diff"], 0.25);
  EXPECT_EQ(t["first_differences"][0]["index"], nlohmann::ordered_json::array({2, 1}));
  EXPECT_EQ(t["first_differences"][0]["values"][1]["value"], 0.75);
}

TEST_F(TensorDumpCompareTest, AReplicatedTensorMissingOnARankDiffers) {
  ASSERT_TRUE(WriteTensorDump(dir_, 2, 3, {{"blocks.0.linear.weight", TensorKind::kParam, torch::full({4, 2}, 0.5f), true}})
                  .ok());
  Result<TensorDumpContents> dump = ReadTensorDump(dir_);
  ASSERT_TRUE(dump.ok()) << dump.status().ToString();
  TensorDumpComparison c = CompareTensorDump(*dump);
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.tensors[1].Key(), "param:blocks.0.linear.bias");
  EXPECT_TRUE(c.tensors[1].Differs());
  EXPECT_EQ(c.tensors[1].missing_ranks, (std::vector<int>{2}));
  EXPECT_NE(TensorComparisonText(c).find("missing on rank 2"), std::string::npos);
}

TEST_F(TensorDumpCompareTest, IdenticalDumpSaysNoDifference) {
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(WriteTensorDump(dir_, rank, 3, {{"w", TensorKind::kParam, torch::ones({2}), true}}).ok());
  }
  Result<TensorDumpContents> dump = ReadTensorDump(dir_);
  ASSERT_TRUE(dump.ok());
  TensorDumpComparison c = CompareTensorDump(*dump);
  EXPECT_EQ(c.DifferingCount(), 0);
  EXPECT_NE(TensorComparisonText(c).find("no difference: 1 tensor identical across ranks"), std::string::npos);
}

TEST_F(TensorDumpCompareTest, RanksThatSavedDifferentStepsAreNotOneDump) {
  ASSERT_TRUE(WriteTensorDump(dir_, 2, 4, {{"w", TensorKind::kParam, torch::ones({2}), true}}).ok());
  Result<TensorDumpContents> dump = ReadTensorDump(dir_);
  ASSERT_FALSE(dump.ok());
  EXPECT_NE(dump.status().message().find("step 4, but rank 0 saved step 3"), std::string::npos)
      << dump.status().message();
}

// Numbers in an index are JSON integers: a step of 3.5 or 1e300, a shape of [4.5] are errors.
TEST_F(TensorDumpCompareTest, AnIndexWithNonIntegerNumbersOrDeepNestingIsRefused) {
  const std::string entry =
      R"({"file": "param__blocks.0.linear.weight.pt", "name": "x", "kind": "param", "dtype": "float32", "shape": )";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("rank": 1, "step": 3.5, "tensors": [])", "step: expected an integer"},
      {R"("rank": 1, "step": 1e300, "tensors": [])", "step: expected an integer"},
      {R"("rank": null, "step": 3, "tensors": [])", "rank: expected an integer"},
      {R"("rank": 1, "step": 3, "tensors": [)" + entry + "[4.5, 2]}]", "shape: expected an integer"},
      {R"("rank": 1, "step": 3, "tensors": )" + std::string(1000, '[') + std::string(1000, ']'), "nested deeper than 64"},
  };
  for (const auto& [body, expected] : cases) {
    std::ofstream(dir_ / "rank-1" / "index.json") << R"({"schema": "lockstep.tensor_dump/1", )" << body << "}";
    Result<TensorDumpContents> dump = ReadTensorDump(dir_);
    ASSERT_FALSE(dump.ok()) << body;
    EXPECT_NE(dump.status().message().find(expected), std::string::npos) << dump.status().message();
  }
}

TEST_F(TensorDumpCompareTest, ReadingRefusesWhatIsNotADump) {
  EXPECT_EQ(ReadTensorDump(dir_ / "nope").status().code(), StatusCode::kNotFound);
  std::filesystem::create_directories(dir_ / "empty");
  Result<TensorDumpContents> empty = ReadTensorDump(dir_ / "empty");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no rank-<r> folders"), std::string::npos);

  {
    std::ofstream(dir_ / "rank-1" / "index.json") << R"({"schema": "lockstep.tensor_dump/2", "rank": 1, "step": 3, "tensors": []})";
  }
  Result<TensorDumpContents> schema = ReadTensorDump(dir_);
  ASSERT_FALSE(schema.ok());
  EXPECT_NE(schema.status().message().find("schema lockstep.tensor_dump/2"), std::string::npos)
      << schema.status().message();

  {
    std::ofstream(dir_ / "rank-1" / "index.json")
        << R"({"schema": "lockstep.tensor_dump/1", "rank": 1, "step": 3, "tensors": [)"
        << R"({"file": "param__blocks.0.linear.weight.pt", "name": "x", "kind": "param", "dtype": "float32", "shape": [8]}]})";
  }
  Result<TensorDumpContents> mismatch = ReadTensorDump(dir_);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("holds float32 [4, 2] but"), std::string::npos)
      << mismatch.status().message();

  {
    std::ofstream(dir_ / "rank-1" / "param__blocks.0.linear.weight.pt") << "not a zip file";
  }
  {
    std::ofstream(dir_ / "rank-1" / "index.json")
        << R"({"schema": "lockstep.tensor_dump/1", "rank": 1, "step": 3, "tensors": [)"
        << R"({"file": "param__blocks.0.linear.weight.pt", "name": "x", "kind": "param", "dtype": "float32", "shape": [4, 2]}]})";
  }
  Result<TensorDumpContents> garbage = ReadTensorDump(dir_);
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("not a tensor saved by torch::pickle_save"), std::string::npos)
      << garbage.status().message();
}

}  // namespace
}  // namespace lockstep
