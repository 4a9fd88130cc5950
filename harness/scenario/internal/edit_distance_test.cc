#include "harness/scenario/internal/edit_distance.h"

#include <gtest/gtest.h>

namespace lockstep::internal {
namespace {

TEST(EditDistanceTest, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
  EXPECT_EQ(EditDistance("hidden", "hiden"), 1u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("MLP", "mlp"), 0u);
}

TEST(EditDistanceTest, SuggestsOnlyPlausibleTypos) {
  const std::vector<std::string_view> keys = {"kind", "layers", "hidden", "heads", "seq_len"};
  EXPECT_EQ(ClosestMatch("hiden", keys), "hidden");
  EXPECT_EQ(ClosestMatch("layer", keys), "layers");
  EXPECT_EQ(ClosestMatch("seqlen", keys), "seq_len");
  EXPECT_FALSE(ClosestMatch("optimizer", keys).has_value());
  EXPECT_FALSE(ClosestMatch("x", {"mpi", "gloo"}).has_value());
  // Ties go to the earlier candidate.
  EXPECT_EQ(ClosestMatch("heads", {"heads", "heads"}), "heads");
  EXPECT_EQ(ClosestMatch("ab", {"ax", "ay"}), "ax");
}

}  // namespace
}  // namespace lockstep::internal
