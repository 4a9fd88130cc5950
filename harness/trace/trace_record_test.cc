#include "harness/trace/trace_record.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(TraceRecordTest, DigestHexRoundTrips) {
  Digest128 d{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  EXPECT_EQ(d.ToHex(), "0123456789abcdeffedcba9876543210");
  auto back = Digest128::FromHex(d.ToHex());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, d);
  EXPECT_EQ(Digest128::FromHex("0123456789ABCDEFFEDCBA9876543210"), d);
  EXPECT_EQ(Digest128{}.ToHex(), std::string(32, '0'));
}

TEST(TraceRecordTest, DigestHexRejectsBadInput) {
  EXPECT_FALSE(Digest128::FromHex("").has_value());
  EXPECT_FALSE(Digest128::FromHex("0123").has_value());
  EXPECT_FALSE(Digest128::FromHex("0123456789abcdeffedcba987654321g").has_value());
  EXPECT_FALSE(Digest128::FromHex("0123456789abcdeffedcba98765432100").has_value());
}

TEST(TraceRecordTest, TensorKindNamesRoundTrip) {
  for (TensorKind k : {TensorKind::kParam, TensorKind::kGrad, TensorKind::kBuffer, TensorKind::kOptimizerState}) {
    EXPECT_EQ(FromString<TensorKind>(ToString(k)), k);
  }
  EXPECT_EQ(std::string(ToString(TensorKind::kOptimizerState)), "optimizer_state");
  EXPECT_FALSE(FromString<TensorKind>("weights").has_value());
}

}  // namespace
}  // namespace lockstep
