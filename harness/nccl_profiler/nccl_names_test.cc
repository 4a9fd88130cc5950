#include "harness/nccl_profiler/nccl_names.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(NcclNamesTest, CollectivesReadAsLockstepsOwn) {
  EXPECT_EQ(OpNameOfNcclFunc("AllReduce"), "all_reduce");
  EXPECT_EQ(OpNameOfNcclFunc("AllGather"), "all_gather");
  EXPECT_EQ(OpNameOfNcclFunc("ReduceScatter"), "reduce_scatter");
  EXPECT_EQ(OpNameOfNcclFunc("Broadcast"), "broadcast");
  EXPECT_EQ(OpNameOfNcclFunc("Reduce"), "reduce");
  EXPECT_EQ(OpNameOfNcclFunc("AlltoAll"), "all_to_all");  // not the rule's "allto_all"
  EXPECT_EQ(OpNameOfNcclFunc("Gather"), "gather");
  EXPECT_EQ(OpNameOfNcclFunc("NewCollective"), "new_collective");
  EXPECT_EQ(OpNameOfNcclFunc(""), "");
}

TEST(NcclNamesTest, DatatypesReadAsTorchsNames) {
  EXPECT_EQ(DtypeNameOfNcclDatatype("ncclFloat32"), "float32");
  EXPECT_EQ(DtypeNameOfNcclDatatype("ncclBfloat16"), "bfloat16");
  EXPECT_EQ(DtypeNameOfNcclDatatype("ncclFloat16"), "float16");
  EXPECT_EQ(DtypeNameOfNcclDatatype("ncclFloat64"), "float64");
  EXPECT_EQ(DtypeNameOfNcclDatatype("ncclInt64"), "int64");
  EXPECT_EQ(DtypeNameOfNcclDatatype("ncclInt32"), "int32");
  EXPECT_EQ(DtypeNameOfNcclDatatype("ncclInt8"), "int8");
  EXPECT_EQ(DtypeNameOfNcclDatatype("ncclUint8"), "uint8");
  EXPECT_EQ(DtypeNameOfNcclDatatype("ncclFloat8e5m2"), "float8_e5m2");
  EXPECT_EQ(DtypeNameOfNcclDatatype("Unknown"), "unknown");  // NCCL 2.28's name for ncclUint8
  EXPECT_EQ(DtypeNameOfNcclDatatype("ncclFloat4"), "float4");
}

TEST(NcclNamesTest, CountIsWhatThisRankContributes) {
  EXPECT_EQ(ContributedCount("AllReduce", 100, 8), 100);
  EXPECT_EQ(ContributedCount("AllGather", 100, 8), 100);  // sendcount
  EXPECT_EQ(ContributedCount("ReduceScatter", 100, 8), 800);  // recvcount x nranks
  EXPECT_EQ(ContributedCount("AlltoAll", 100, 8), 800);  // per peer x nranks
  EXPECT_EQ(ContributedCount("Broadcast", 100, 8), 100);
  EXPECT_EQ(ContributedCount("ReduceScatter", 100, 0), 100);  // nranks unknown: as NCCL gave it
}

TEST(NcclNamesTest, OnlyRootedCollectivesKeepTheirRoot) {
  EXPECT_TRUE(NcclFuncHasRoot("Broadcast"));
  EXPECT_TRUE(NcclFuncHasRoot("Reduce"));
  EXPECT_FALSE(NcclFuncHasRoot("AllReduce"));
  EXPECT_FALSE(NcclFuncHasRoot("ReduceScatter"));
}

}  // namespace
}  // namespace lockstep
