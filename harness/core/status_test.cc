#include "harness/core/status.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Status UseHalf(int x, int* out) {
  LOCKSTEP_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::Ok();
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = CommunicationError("rank 1: MPI_Allreduce failed");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "communication: rank 1: MPI_Allreduce failed");
  EXPECT_EQ(s.WithContext("step 3").message(), "step 3: rank 1: MPI_Allreduce failed");
}

TEST(StatusTest, ResultPropagates) {
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status s = UseHalf(3, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd: 3");
}

TEST(StatusTest, ResultFromOkStatusIsInternalError) {
  Result<int> r{Status::Ok()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace lockstep
