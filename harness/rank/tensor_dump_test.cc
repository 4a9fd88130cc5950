#include "harness/rank/tensor_dump.h"
#include "harness/core/testing/temp_dir.h"

#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

namespace lockstep {
namespace {

std::vector<char> ReadBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json ReadJson(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(TensorDumpTest, SelectsByQualifiedNameOrBareName) {
  const std::vector<std::string> patterns = {"param:blocks.0.*", "lm_head.bias"};
  EXPECT_TRUE(DumpSelects(patterns, "blocks.0.linear.weight", TensorKind::kParam));
  EXPECT_FALSE(DumpSelects(patterns, "blocks.0.linear.weight", TensorKind::kGrad));
  EXPECT_FALSE(DumpSelects(patterns, "blocks.1.linear.weight", TensorKind::kParam));
  EXPECT_TRUE(DumpSelects(patterns, "lm_head.bias", TensorKind::kGrad));
  EXPECT_TRUE(DumpSelects({"*"}, "anything#exp_avg", TensorKind::kOptimizerState));
  EXPECT_FALSE(DumpSelects({}, "blocks.0.linear.weight", TensorKind::kParam));
  // A finding's name with glob characters in it is matched literally once escaped.
  EXPECT_TRUE(DumpSelects({"param:w\\[0\\]"}, "w[0]", TensorKind::kParam));
  EXPECT_FALSE(DumpSelects({"param:w\\[0\\]"}, "w0", TensorKind::kParam));
}

TEST(TensorDumpTest, FileNamesKeepKindAndNameAndStaySafe) {
  EXPECT_EQ(DumpFileName(TensorKind::kParam, "blocks.0.linear.weight"), "param__blocks.0.linear.weight.pt");
  EXPECT_EQ(DumpFileName(TensorKind::kOptimizerState, "w#exp_avg"), "optimizer_state__w#exp_avg.pt");
  EXPECT_EQ(DumpFileName(TensorKind::kBuffer, "a/b c"), "buffer__a_b_c.pt");
  EXPECT_EQ(DumpFileName(TensorKind::kGrad, ".hidden"), "grad___hidden.pt");
}

TEST(TensorDumpTest, WritesPickleFilesThatLoadBackAndAnIndex) {
  const testing::TempDir temp("lockstep_tensor_dump_test_write_");
  const std::filesystem::path dir = temp / "dump";
  torch::Tensor weight = torch::arange(12, torch::kFloat32).reshape({3, 4});
  // A strided view: the file must hold the view's values only, not its whole storage.
  torch::Tensor column = weight.select(1, 2);
  torch::Tensor steps = torch::tensor({7}, torch::kInt64);
  ASSERT_TRUE(WriteTensorDump(dir, 2, 5,
                              {{"w", TensorKind::kParam, weight, true},
                               {"w.col", TensorKind::kGrad, column, true},
                               {"w#step", TensorKind::kOptimizerState, steps, false}})
                  .ok());

  const auto rank_dir = dir / "rank-2";
  const nlohmann::json index = ReadJson(rank_dir / "index.json");
  EXPECT_EQ(index["schema"], "lockstep.tensor_dump/1");
  EXPECT_EQ(index["rank"], 2);
  EXPECT_EQ(index["step"], 5);
  ASSERT_EQ(index["tensors"].size(), 3u);
  EXPECT_EQ(index["tensors"][0]["file"], "param__w.pt");
  EXPECT_EQ(index["tensors"][0]["name"], "w");
  EXPECT_EQ(index["tensors"][0]["kind"], "param");
  EXPECT_EQ(index["tensors"][0]["dtype"], "float32");
  EXPECT_EQ(index["tensors"][0]["shape"], nlohmann::json::array({3, 4}));
  EXPECT_EQ(index["tensors"][0]["replicated"], true);
  EXPECT_EQ(index["tensors"][2]["dtype"], "int64");
  EXPECT_EQ(index["tensors"][2]["replicated"], false);

  torch::Tensor w = torch::pickle_load(ReadBytes(rank_dir / "param__w.pt")).toTensor();
  EXPECT_TRUE(torch::equal(w, weight));
  torch::Tensor col = torch::pickle_load(ReadBytes(rank_dir / "grad__w.col.pt")).toTensor();
  EXPECT_TRUE(torch::equal(col, column));
  EXPECT_EQ(col.storage().nbytes(), 3 * sizeof(float));
  torch::Tensor s = torch::pickle_load(ReadBytes(rank_dir / "optimizer_state__w#step.pt")).toTensor();
  EXPECT_EQ(s.item<int64_t>(), 7);
}

TEST(TensorDumpTest, NamesThatCollideAfterReplacementGetDistinctFiles) {
  const testing::TempDir temp("lockstep_tensor_dump_test_collide_");
  const std::filesystem::path dir = temp / "dump";
  ASSERT_TRUE(WriteTensorDump(dir, 0, 1,
                              {{"a/b", TensorKind::kParam, torch::zeros({1}), true},
                               {"a b", TensorKind::kParam, torch::ones({1}), true}})
                  .ok());
  const nlohmann::json index = ReadJson(dir / "rank-0" / "index.json");
  ASSERT_EQ(index["tensors"].size(), 2u);
  EXPECT_NE(index["tensors"][0]["file"], index["tensors"][1]["file"]);
  for (const auto& t : index["tensors"]) {
    EXPECT_TRUE(std::filesystem::exists(dir / "rank-0" / t["file"].get<std::string>())) << t["file"];
  }
}

TEST(TensorDumpTest, DumpTensorsWritesWhatThePatternsSelect) {
  const testing::TempDir temp("lockstep_tensor_dump_test_select_");
  const std::filesystem::path dir = temp / "dump";
  DumpStateSource state = [](const DumpTensorVisitor& visit) {
    visit("blocks.0.linear.weight", TensorKind::kParam, torch::ones({2, 2}), true);
    visit("blocks.0.linear.weight", TensorKind::kGrad, torch::zeros({2, 2}), true);
    visit("blocks.1.linear.weight", TensorKind::kParam, torch::ones({2, 2}), true);
  };
  ASSERT_TRUE(DumpTensors({{"param:blocks.0.*"}, dir}, state, 1, 3).ok());
  const nlohmann::json index = ReadJson(dir / "rank-1" / "index.json");
  ASSERT_EQ(index["tensors"].size(), 1u);
  EXPECT_EQ(index["tensors"][0]["name"], "blocks.0.linear.weight");
  EXPECT_EQ(index["tensors"][0]["kind"], "param");
}

TEST(TensorDumpTest, PatternsThatSelectNothingAreAnErrorNamingWhatThereIs) {
  const testing::TempDir temp("lockstep_tensor_dump_test_nothing_");
  const std::filesystem::path dir = temp / "dump";
  DumpStateSource state = [](const DumpTensorVisitor& visit) {
    visit("blocks.0.linear.weight", TensorKind::kParam, torch::ones({2}), true);
  };
  Status s = DumpTensors({{"param:no_such_tensor"}, dir}, state, 0, 3);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("param:no_such_tensor"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("param:blocks.0.linear.weight"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(dir / "rank-0"));
}

}  // namespace
}  // namespace lockstep
