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

// The shortest digits that read back as v (std::to_chars, which finds them exactly), laid out as
// nlohmann::json lays out a double: plain digits with a point while 10^-5 < |v| < 10^15 ("0.00012",
// "12.5", "1000.0"), else an exponent. The oracle for the values lockstep writes itself.
std::string ShortestInJsonLayout(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);  // "-1.2345e-04"
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c >= '0' && c <= '9') digits.push_back(c);
  }
  const int point = std::stoi(sci.substr(e + 1)) + 1;  // digits before the point
  const int len = static_cast<int>(digits.size());
  std::string out = v < 0 ? "-" : "";
  if (point > 15 || point <= -4) return nlohmann::json(v).dump();
  if (point >= len) return out + digits + std::string(static_cast<size_t>(point - len), '0') + ".0";
  if (point > 0) return out + digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
  return out + "0." + std::string(static_cast<size_t>(-point), '0') + digits;
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
    const bool whole_micros = std::nearbyint(v * 1e6) / 1e6 == v && !(v == 0 && std::signbit(v)) && std::fabs(v) < 1e9;
    if (whole_micros) continue;
    if (std::fabs(v) >= 1e-4 && std::fabs(v) < 1e15) {
      ASSERT_EQ(text, ShortestInJsonLayout(v));
    } else {
      ASSERT_EQ(text, nlohmann::json(v).dump());
    }
  }
  EXPECT_EQ(Text(-0.0), "-0.0");
}

// Losses and norms (1e-4 <= |v| < 1e15, not whole microseconds) are written by lockstep's own
// integer arithmetic: the shortest digits that read back (std::to_chars'), laid out as nlohmann
// lays out a double of that size. The values where it is most easily wrong: float32 values widened
// (most losses), powers of two (a narrower gap below), the range's ends, the neighbours of short
// decimals, values that round up to a power of ten.
TEST(DoubleTextTest, LossesAndNormsAreTheShortestTextThatReadsBack) {
  std::vector<double> values = {0.1 + 0.2, 1.0 / 3.0, 2.0 / 3.0, 1e-4, std::nextafter(1e-4, 1.0), 0.00012345678901234,
                                3.9287357330322266, 1.648889675089757, 9.999999999999999e14,
                                std::nextafter(1e15, 0.0), 99999.99999999999, 0.09999999999999999, 123456789.123456789};
  for (int e = -13; e < 50; ++e) {
    const double p = std::ldexp(1.0, e);
    values.push_back(p);
    values.push_back(std::nextafter(p, 0.0));
    values.push_back(std::nextafter(p, 1e300));
  }
  std::mt19937_64 rng(47);
  std::uniform_real_distribution<double> exponent(-4.0, 15.0);
  std::uniform_int_distribution<uint32_t> float_bits(0x38d1b717u, 0x58635fa9u);  // float32 1e-4 .. 1e15
  for (int i = 0; i < 200000; ++i) {
    const double v = std::pow(10.0, exponent(rng));
    values.push_back(v);
    values.push_back(-v);
    const uint32_t b = float_bits(rng);
    float f;
    std::memcpy(&f, &b, sizeof f);
    values.push_back(static_cast<double>(f));
    char nine[32];  // a short decimal's neighbours
    const auto r = std::to_chars(nine, nine + sizeof nine, v, std::chars_format::scientific, 5);
    double d = 0;
    std::from_chars(nine, r.ptr, d);
    values.push_back(std::nextafter(d, 0.0));
    values.push_back(std::nextafter(d, 1e300));
  }
  size_t checked = 0;
  for (double v : values) {
    if (!(std::fabs(v) >= 1e-4 && std::fabs(v) < 1e15)) continue;
    if (std::nearbyint(v * 1e6) / 1e6 == v && std::fabs(v) < 1e9) continue;  // whole microseconds
    const std::string text = Text(v);
    ASSERT_EQ(Bits(ReadBack(text)), Bits(v)) << text;
    ASSERT_EQ(text, ShortestInJsonLayout(v)) << "nlohmann: " << nlohmann::json(v).dump();
    ++checked;
  }
  EXPECT_GT(checked, 900000u);
}

}  // namespace
}  // namespace lockstep
