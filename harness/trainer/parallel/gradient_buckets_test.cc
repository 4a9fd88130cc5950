#include "harness/trainer/parallel/gradient_buckets.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(GradientBucketsTest, ReverseOrderAndCap) {
  // 4-byte elements, 1 KiB cap = 256 elements.
  const double kib = 1.0 / 1024.0;
  auto buckets = AssignBuckets({100, 100, 100, 300}, 4, kib);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].params, (std::vector<int>{3}));      // larger than the cap: alone
  EXPECT_EQ(buckets[1].params, (std::vector<int>{2, 1}));   // 200 elements fit, a third does not
  EXPECT_EQ(buckets[2].params, (std::vector<int>{0}));
  EXPECT_EQ(buckets[1].numel, 200);
}

TEST(GradientBucketsTest, EverythingInOneBucketWhenItFits) {
  auto buckets = AssignBuckets({10, 20, 30}, 4, 1.0);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].params, (std::vector<int>{2, 1, 0}));
  EXPECT_EQ(buckets[0].numel, 60);
}

}  // namespace
}  // namespace lockstep
