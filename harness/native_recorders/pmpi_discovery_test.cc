// The PMPI wrappers under mpirun -np 2: the test's own MPI calls (MPI_Init in main, and those
// below) reach the discovery log through them, with the phase and step of the moment, while
// calls that discover nothing (collectives, queries) leave no record.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "harness/discovery/discovery_log.h"

namespace lockstep {
namespace {

std::vector<std::string> Names(const std::vector<DiscoveryRecord>& calls) {
  std::vector<std::string> names;
  for (const DiscoveryRecord& r : calls) names.push_back(r.name);
  return names;
}

int WorldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

TEST(PmpiDiscoveryTest, MpiInitOfMainIsTheFirstCallAtStartup) {
  const std::vector<DiscoveryRecord> calls = DiscoveryCalls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls[0].name, "mpi.init");
  EXPECT_EQ(calls[0].call, 1);
  EXPECT_EQ(calls[0].phase, "startup");
  EXPECT_EQ(calls[0].step, 0);
  EXPECT_EQ(calls[0].comm, "mpi:world");
}

TEST(PmpiDiscoveryTest, CommunicatorsBuiltMidTrainingCarryTheirStepAndPhase) {
  const int before = DiscoveryCount();
  std::vector<DiscoveryRecord> seen;
  SetDiscoveryObserver([&seen](const DiscoveryRecord& r) { seen.push_back(r); });
  seen.clear();  // the observer is handed every earlier call first
  SetDiscoveryContext("step", 3);
  MPI_Comm split = MPI_COMM_NULL, dup = MPI_COMM_NULL, typed = MPI_COMM_NULL, created = MPI_COMM_NULL;
  {
    ScopedDiscoveryPhase phase("attention_forward");
    ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, WorldRank(), 0, &split), MPI_SUCCESS);
  }
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &dup), MPI_SUCCESS);
  ASSERT_EQ(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &typed), MPI_SUCCESS);
  MPI_Group group;
  MPI_Comm_group(MPI_COMM_WORLD, &group);
  ASSERT_EQ(MPI_Comm_create(MPI_COMM_WORLD, group, &created), MPI_SUCCESS);
  MPI_Group_free(&group);
  // Not discovery: a collective and queries.
  int one = 1, sum = 0, size = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_size(split, &size);
  SetDiscoveryObserver(nullptr);

  const std::vector<DiscoveryRecord> calls = DiscoveryCalls();
  ASSERT_EQ(calls.size(), static_cast<size_t>(before) + 4);
  const std::vector<DiscoveryRecord> mine(calls.begin() + before, calls.end());
  EXPECT_EQ(Names(mine), (std::vector<std::string>{"mpi.comm_split", "mpi.comm_dup", "mpi.comm_split_type",
                                                   "mpi.comm_create"}));
  EXPECT_EQ(Names(seen), Names(mine));
  EXPECT_EQ(mine[0].phase, "attention_forward");
  EXPECT_EQ(mine[1].phase, "step");
  for (const DiscoveryRecord& r : mine) EXPECT_EQ(r.step, 3);
  EXPECT_EQ(mine[0].comm, "mpi:" + std::to_string(MPI_Comm_c2f(split)) + "/1");  // one rank per color
  EXPECT_EQ(mine[1].comm, "mpi:" + std::to_string(MPI_Comm_c2f(dup)) + "/2");
  EXPECT_EQ(sum, 2);
  EXPECT_EQ(size, 1);
  for (MPI_Comm* c : {&split, &dup, &typed, &created}) MPI_Comm_free(c);
  SetDiscoveryContext("startup", 0);
}

}  // namespace
}  // namespace lockstep
