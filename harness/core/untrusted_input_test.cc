#include "harness/core/untrusted_input.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

TEST(FindJsonTooDeepTest, NamesTheBracketThatGoesTooDeep) {
  EXPECT_FALSE(FindJsonTooDeep(R"({"a": [[1, 2], {"b": 3}]})", 3));
  std::optional<std::string> where = FindJsonTooDeep("{\"a\":\n  [[[1]]]}", 3);
  ASSERT_TRUE(where);
  EXPECT_EQ(*where, "line 2, column 5: nested deeper than 3 levels");
}

TEST(FindJsonTooDeepTest, BracketsInsideStringsDoNotCount) {
  EXPECT_FALSE(FindJsonTooDeep(R"(["[[[[", "\"{{{{"])", 2));
  EXPECT_TRUE(FindJsonTooDeep(std::string(100000, '['), kMaxJsonDepth));
}

TEST(JsonIntegerTest, OnlyIntegersInRange) {
  using nlohmann::json;
  EXPECT_EQ(JsonInteger<int64_t>(json::parse("3")), 3);
  EXPECT_EQ(JsonInteger<int>(json::parse("-7")), -7);
  EXPECT_FALSE(JsonInteger<int64_t>(json::parse("3.5")));
  EXPECT_FALSE(JsonInteger<int64_t>(json::parse("3.0")));
  EXPECT_FALSE(JsonInteger<int64_t>(json::parse("null")));
  EXPECT_FALSE(JsonInteger<int64_t>(json::parse("1e300")));
  EXPECT_FALSE(JsonInteger<int64_t>(json::parse("\"3\"")));
  EXPECT_FALSE(JsonInteger<int>(json::parse("4294967296")));
  EXPECT_FALSE(JsonInteger<int64_t>(json::parse("18446744073709551615")));
  EXPECT_EQ(JsonInteger<uint64_t>(json::parse("18446744073709551615")), UINT64_MAX);
  EXPECT_FALSE(JsonInteger<uint64_t>(json::parse("-1")));
}

TEST(ReadBoundedFileTest, ReadsAFileWithinTheLimit) {
  testing::TempDir temp("lockstep_untrusted_");
  const fs::path file = temp / "small.json";
  std::ofstream(file) << "{}\n";
  Result<std::string> text = ReadBoundedFile(file, 3, "report");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "{}\n");
}

TEST(ReadBoundedFileTest, RefusesLargeFilesFoldersAndMissingFiles) {
  testing::TempDir temp("lockstep_untrusted_");
  const fs::path& dir = temp.path();
  std::ofstream(dir / "big.json") << "0123456789";
  Result<std::string> big = ReadBoundedFile(dir / "big.json", 9, "report");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("report file is 10 bytes; at most 9 bytes are read"), std::string::npos);

  fs::create_directories(dir / "rank-0.trace");
  Result<std::string> folder = ReadBoundedFile(dir / "rank-0.trace", 100, "trace");
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.status().message().find("is a directory, not a trace file"), std::string::npos);

  Result<std::string> missing = ReadBoundedFile(dir / "none.json", 100, "report");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace lockstep
