#include "harness/comm/communicator_factory.h"

#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/cuda.h>
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

// device cuda: mpi comes wrapped in the host-staging decorator, which leaves host tensors alone
// and, on a GPU machine, carries CUDA tensors through host memory.
TEST(CommunicatorFactoryTest, MpiForCudaTensorsStagesThemThroughTheHost) {
  Topology topo = Discover();
  auto comm = MakeCommunicator(Backend::kMpi, topo, Device::kCuda);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ((*comm)->backend_name(), "mpi");
  torch::Tensor host = torch::ones({3});
  ASSERT_TRUE((*comm)->AllReduce(host, ReduceOp::kSum).ok());
  EXPECT_EQ(host[2].item<float>(), static_cast<float>(topo.world_size));
  if (!torch::cuda::is_available()) return;  // the CUDA half needs a GPU (HostStagingCommunicatorCudaTest)
  torch::Tensor device = torch::full({5}, static_cast<float>(topo.rank), torch::Device(torch::kCUDA, 0));
  ASSERT_TRUE((*comm)->AllReduce(device, ReduceOp::kSum).ok());
  EXPECT_TRUE(device.is_cuda());
  const float n = static_cast<float>(topo.world_size);
  EXPECT_EQ(device[4].item<float>(), n * (n - 1) / 2);
  auto plain = MakeCommunicator(Backend::kMpi, topo);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->AllReduce(device, ReduceOp::kSum).code(), StatusCode::kInvalidArgument)
      << "without staging the mpi backend refuses CUDA tensors";
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
