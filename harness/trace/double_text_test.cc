#include "harness/trace/double_text.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

namespace lockstep {
namespace {

std::string Text(double v) {
  char buf[kDoubleTextMax];
  return std::string(buf, WriteDoubleText(v, buf));
}

std::string ShortestText(double v) {
  char buf[kDoubleTextMax];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

double ReadBack(const std::string& text) {
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  EXPECT_EQ(r.ec, std::errc()) << text;
  EXPECT_EQ(r.ptr, text.data() + text.size()) << text;
  return v;
}

// Whole microseconds (a clock reading) are written from the integer: a plain decimal, at most six
// decimals, no trailing zero, the same number as the shortest form; every one reads back exactly.
TEST(DoubleTextTest, WholeMicrosecondsAreAPlainDecimalThatReadsBackExactly) {
  const std::regex plain(R"(-?(0|[1-9][0-9]*)(\.[0-9]{0,5}[1-9])?)");
  std::mt19937_64 rng(7);
  for (int64_t limit : {int64_t{10}, int64_t{1000000}, int64_t{86400000000}, int64_t{999999999999999}}) {
    std::uniform_int_distribution<int64_t> k(-limit, limit);
    for (int i = 0; i < 20000; ++i) {
      const double v = static_cast<double>(k(rng)) / 1e6;
      const std::string text = Text(v);
      ASSERT_TRUE(std::regex_match(text, plain)) << text;
      ASSERT_EQ(Bits(ReadBack(text)), Bits(v)) << text;
      ASSERT_EQ(Bits(ReadBack(ShortestText(v))), Bits(ReadBack(text))) << text << " vs " << ShortestText(v);
    }
  }
  EXPECT_EQ(Text(12.5), "12.5");
  EXPECT_EQ(Text(0.000001), "0.000001");
  EXPECT_EQ(Text(-3.25), "-3.25");
  EXPECT_EQ(Text(7.0), "7");
  EXPECT_EQ(Text(0.0), "0");
  EXPECT_EQ(Text(999999999.999999), "999999999.999999");
}

// Every other value is written as nlohmann::json writes it, and reads back bit for bit: the doubles
// next to whole microseconds, -0.0, values past the integer path's range, subnormals, extremes,
// random bit patterns.
TEST(DoubleTextTest, EveryOtherValueIsJsonsTextAndReadsBackExactly) {
  std::vector<double> values = {-0.0, 0.1 + 0.2, 1.0 / 3.0, 2.5e-7, 1e9, -1e9, 1e9 + 0.5, 1e300, -1e-300,
                                std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::min(),
                                std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                                std::numeric_limits<double>::epsilon()};
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> k(-999999999999, 999999999999);
  for (int i = 0; i < 20000; ++i) {
    const double v = static_cast<double>(k(rng)) / 1e6;
    values.push_back(std::nextafter(v, std::numeric_limits<double>::infinity()));
    values.push_back(std::nextafter(v, -std::numeric_limits<double>::infinity()));
  }
  std::uniform_int_distribution<uint64_t> bits;
  for (int i = 0; i < 20000; ++i) {
    double v;
    const uint64_t b = bits(rng);
    std::memcpy(&v, &b, sizeof v);
    if (std::isfinite(v)) values.push_back(v);
  }
  for (double v : values) {
    const std::string text = Text(v);
    ASSERT_EQ(Bits(ReadBack(text)), Bits(v)) << text;
    if (std::nearbyint(v * 1e6) / 1e6 != v || (v == 0 && std::signbit(v)) || std::fabs(v) >= 1e9) {
      ASSERT_EQ(text, nlohmann::json(v).dump());
    }
  }
  EXPECT_EQ(Text(-0.0), "-0.0");
}

}  // namespace
}  // namespace lockstep
