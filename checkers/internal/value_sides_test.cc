#include "checkers/internal/value_sides.h"

#include <gtest/gtest.h>

namespace lockstep::internal {
namespace {

TEST(ValueSidesTest, AMajorityLeavesTheOtherSidesOdd) {
  ValueSides sides;
  sides.Add("Ring", 0);
  sides.Add("Tree", 1);
  sides.Add("Ring", 2);
  sides.Add("Ring", 3);
  sides.Add("NVLS", 4);
  ASSERT_EQ(sides.sides().size(), 3u);
  EXPECT_EQ(sides.sides()[0].value, "Ring");  // in the order first added
  EXPECT_EQ(sides.sides()[1].value, "Tree");
  EXPECT_EQ(sides.sides()[0].ranks, (std::vector<int>{0, 2, 3}));
  EXPECT_TRUE(sides.HasMajority());
  EXPECT_EQ(sides.MostCommon().value, "Ring");
  EXPECT_EQ(sides.OddRanks(), (std::vector<int>{1, 4}));
}

TEST(ValueSidesTest, WithoutAMajorityEveryRankIsOdd) {
  ValueSides sides;
  sides.Add("b", 3);
  sides.Add("a", 0);
  sides.Add("a", 1);
  sides.Add("b", 2);
  EXPECT_FALSE(sides.HasMajority());         // two against two is no majority
  EXPECT_EQ(sides.MostCommon().value, "b");  // of equals, the first added
  EXPECT_EQ(sides.OddRanks(), (std::vector<int>{0, 1, 2, 3}));

  ValueSides thirds;  // the most common side, a third of the ranks: no majority either
  for (int r = 0; r < 6; ++r) thirds.Add(std::to_string(r % 3), r);
  EXPECT_FALSE(thirds.HasMajority());
  EXPECT_EQ(thirds.OddRanks().size(), 6u);
}

TEST(ValueSidesTest, OneValueHasNoOddRank) {
  ValueSides sides;
  sides.Add("x", 0);
  sides.Add("x", 1);
  EXPECT_TRUE(sides.HasMajority());
  EXPECT_TRUE(sides.OddRanks().empty());
  EXPECT_FALSE(ValueSides().HasMajority());
}

}  // namespace
}  // namespace lockstep::internal
