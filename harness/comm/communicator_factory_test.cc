#include "harness/comm/communicator_factory.h"

#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/types.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace lockstep {
namespace {

Topology Discover() {
  Result<Topology> topo = DiscoverTopology(1, "test", 0);
  EXPECT_TRUE(topo.ok()) << topo.status().ToString();
  return topo.ok() ? *topo : Topology{};
}

TEST(CommunicatorFactoryTest, MpiWorldMatchesTheDiscoveredTopology) {
  Topology topo = Discover();
  EXPECT_EQ(topo.source, "openmpi") << "these tests run under mpirun";
  auto comm = MakeCommunicator(Backend::kMpi, topo);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ((*comm)->rank(), topo.rank);
  EXPECT_EQ((*comm)->size(), topo.world_size);
  torch::Tensor t = torch::ones({3});
  ASSERT_TRUE((*comm)->AllReduce(t, ReduceOp::kSum).ok());
  EXPECT_EQ(t[0].item<float>(), static_cast<float>(topo.world_size));
  EXPECT_TRUE(BackendBuilt(Backend::kMpi));
}

TEST(CommunicatorFactoryTest, AWorldThatDisagreesWithTheLauncherIsRejected) {
  Topology topo = Discover();
  topo.world_size += 1;
  auto comm = MakeCommunicator(Backend::kMpi, topo);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(comm.status().message().find("says rank"), std::string::npos) << comm.status().message();
}

TEST(CommunicatorFactoryTest, GlooFromTheStoreFileVariable) {
  if (!BackendBuilt(Backend::kGloo)) GTEST_SKIP() << "gloo is not built (libgloo-dev headers missing)";
  Topology topo = Discover();
  char path[4096] = {};
  if (topo.rank == 0) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lockstep-factory-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) std::strncpy(path, (tmpl + "/store").c_str(), sizeof(path) - 1);
  }
  MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);
  ASSERT_NE(path[0], '\0');
  setenv("LOCKSTEP_STORE_FILE", path, 1);
  auto comm = MakeCommunicator(Backend::kGloo, topo);
  unsetenv("LOCKSTEP_STORE_FILE");
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ((*comm)->backend_name(), "gloo");
  torch::Tensor t = torch::full({2}, static_cast<double>(topo.rank));
  ASSERT_TRUE((*comm)->Broadcast(t, 0).ok());
  EXPECT_EQ(t[1].item<double>(), 0.0);
  comm->reset();
  MPI_Barrier(MPI_COMM_WORLD);
  if (topo.rank == 0) std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(CommunicatorFactoryTest, NcclNeedsADevice) {
  Topology topo = Discover();
  if (topo.cuda_device >= 0) GTEST_SKIP() << "this machine has a GPU: comm_nccl_test covers nccl";
  auto comm = MakeCommunicator(Backend::kNccl, topo);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kUnavailable) << comm.status().ToString();
}

}  // namespace
}  // namespace lockstep
