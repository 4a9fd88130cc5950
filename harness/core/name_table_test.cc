#include "harness/core/name_table.h"

#include <gtest/gtest.h>

#include <string>

namespace lockstep {

enum class Fruit { kApple, kPear, kQuince };

template <>
const NameTable<Fruit>& NamesOf<Fruit>() {
  // kQuince deliberately has no row: it stands for a value someone forgot to name.
  static const NameTable<Fruit> kTable = {{"apple", Fruit::kApple}, {"pear", Fruit::kPear}};
  return kTable;
}

namespace {

TEST(NameTableTest, ValueToName) {
  EXPECT_STREQ(NameOf(Fruit::kApple), "apple");
  EXPECT_STREQ(NameOf(Fruit::kPear), "pear");
}

TEST(NameTableTest, NameToValue) {
  EXPECT_EQ(FromString<Fruit>("apple"), Fruit::kApple);
  EXPECT_EQ(FromString<Fruit>("pear"), Fruit::kPear);
}

TEST(NameTableTest, AValueWithoutARowIsUnknown) { EXPECT_STREQ(NameOf(Fruit::kQuince), "unknown"); }

TEST(NameTableTest, UnknownNamesAreRejectedExactly) {
  EXPECT_EQ(FromString<Fruit>("quince"), std::nullopt);
  EXPECT_EQ(FromString<Fruit>("Apple"), std::nullopt);  // case matters: names are a file format
  EXPECT_EQ(FromString<Fruit>("appl"), std::nullopt);
  EXPECT_EQ(FromString<Fruit>(""), std::nullopt);
}

TEST(NameTableTest, NamesKeepTableOrder) {
  EXPECT_EQ(NameList<Fruit>(), (std::vector<std::string>{"apple", "pear"}));
}

TEST(NameTableTest, ALocalTableReadsBothWays) {
  const NameTable<Fruit> table = {{"quince", Fruit::kQuince}, {"apple", Fruit::kApple}};
  EXPECT_STREQ(NameIn(table, Fruit::kQuince), "quince");
  EXPECT_STREQ(NameIn(table, Fruit::kPear), "unknown");
  EXPECT_EQ(ValueIn(table, "apple"), Fruit::kApple);
  EXPECT_EQ(ValueIn(table, "pear"), std::nullopt);
  EXPECT_EQ(NamesIn(table), (std::vector<std::string>{"quince", "apple"}));
}

}  // namespace
}  // namespace lockstep
