#include "harness/core/testing/temp_dir.h"

#include <gtest/gtest.h>

#include <fstream>

namespace lockstep::testing {
namespace {

TEST(TempDirTest, IsFreshUniqueAndGoneAfterwards) {
  std::filesystem::path kept;
  {
    TempDir a("lockstep_tempdir_test_");
    TempDir b("lockstep_tempdir_test_");
    ASSERT_TRUE(std::filesystem::is_directory(a.path()));
    EXPECT_NE(a.path(), b.path());
    EXPECT_TRUE(std::filesystem::is_empty(a.path()));
    std::filesystem::create_directories(a / "sub" / "dir");
    std::ofstream(a / "sub" / "dir" / "file") << "x";
    kept = a.path();
  }
  EXPECT_FALSE(std::filesystem::exists(kept));
}

}  // namespace
}  // namespace lockstep::testing
