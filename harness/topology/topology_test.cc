#include "harness/topology/topology.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/discovery/discovery_log.h"

namespace lockstep {
namespace {

const char* const kLauncherVariables[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_RANK", "SLURM_PROCID", "SLURM_NTASKS",
    "SLURM_NPROCS", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"};

// Clears every launcher variable for the test and puts the originals back afterwards, so that the
// test means the same under mpirun, srun or a plain shell.
class TopologyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kLauncherVariables) {
      const char* value = std::getenv(name);
      saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
      unsetenv(name);
    }
    ResetDiscoveryForTest();
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
    ResetDiscoveryForTest();
  }
  static void Set(const std::map<std::string, std::string>& vars) {
    for (const auto& [name, value] : vars) setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(TopologyTest, SingleProcessWithoutLauncher) {
  Result<Topology> topo = DiscoverTopology(1, "startup", 0);
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  EXPECT_EQ(topo->source, "single");
  EXPECT_EQ(topo->world_size, 1);
  EXPECT_EQ(topo->rank, 0);
  EXPECT_EQ(topo->local_world_size, 1);
  EXPECT_EQ(topo->slice_peers, std::vector<int>({0}));
  EXPECT_EQ(topo->cross_peers, std::vector<int>({0}));
  EXPECT_FALSE(topo->host.empty());
  EXPECT_EQ(topo->DeviceFor(Device::kCpu).value(), "cpu");
}

TEST_F(TopologyTest, TorchrunEightRanksTwoSlices) {
  Set({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}});
  Result<Topology> topo = DiscoverTopology(2, "startup", 0);
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  EXPECT_EQ(topo->source, "torchrun");
  EXPECT_EQ(topo->rank, 5);
  EXPECT_EQ(topo->world_size, 8);
  EXPECT_EQ(topo->local_rank, 1);
  EXPECT_EQ(topo->local_world_size, 4);
  EXPECT_EQ(topo->slices, 2);
  EXPECT_EQ(topo->slice_size, 4);
  EXPECT_EQ(topo->slice, 1);
  EXPECT_EQ(topo->slice_rank, 1);
  EXPECT_EQ(topo->slice_peers, std::vector<int>({4, 5, 6, 7}));
  EXPECT_EQ(topo->cross_peers, std::vector<int>({1, 5}));
}

TEST_F(TopologyTest, OpenMpiFourRanksFourSlices) {
  Set({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  Result<Topology> topo = DiscoverTopology(4, "startup", 0);
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  EXPECT_EQ(topo->source, "openmpi");
  EXPECT_EQ(topo->slice, 2);
  EXPECT_EQ(topo->slice_rank, 0);
  EXPECT_EQ(topo->slice_peers, std::vector<int>({2}));
  EXPECT_EQ(topo->cross_peers, std::vector<int>({0, 1, 2, 3}));
}

TEST_F(TopologyTest, TorchrunWinsOverOpenMpi) {
  Set({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  Result<Topology> topo = DiscoverTopology(1, "startup", 0);
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  EXPECT_EQ(topo->source, "torchrun");
  EXPECT_EQ(topo->rank, 1);
  EXPECT_EQ(topo->world_size, 2);
  // Without LOCAL_* every rank is taken to share the host.
  EXPECT_EQ(topo->local_rank, 1);
  EXPECT_EQ(topo->local_world_size, 2);
}

TEST_F(TopologyTest, PmixTakesTheSizeFromSlurm) {
  Set({{"PMIX_RANK", "3"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "1"},
       {"SLURM_STEP_TASKS_PER_NODE", "3(x2)"}});
  Result<Topology> topo = DiscoverTopology(3, "startup", 0);
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  EXPECT_EQ(topo->source, "pmix");
  EXPECT_EQ(topo->rank, 3);
  EXPECT_EQ(topo->world_size, 6);
  EXPECT_EQ(topo->local_rank, 0);
  EXPECT_EQ(topo->local_world_size, 3);
  EXPECT_EQ(topo->slice, 1);
  EXPECT_EQ(topo->slice_peers, std::vector<int>({2, 3}));
  EXPECT_EQ(topo->cross_peers, std::vector<int>({1, 3, 5}));
}

TEST_F(TopologyTest, PmixWithoutASizeIsAnError) {
  Set({{"PMIX_RANK", "0"}});
  Result<Topology> topo = DiscoverTopology(1, "startup", 0);
  ASSERT_FALSE(topo.ok());
  EXPECT_NE(topo.status().message().find("SLURM_NTASKS"), std::string::npos) << topo.status().message();
}

TEST_F(TopologyTest, SlurmTaskListIsIndexedByNode) {
  Set({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "5"}, {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "2"},
       {"SLURM_TASKS_PER_NODE", "2(x2),1"}});
  Result<Topology> topo = DiscoverTopology(1, "startup", 0);
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  EXPECT_EQ(topo->source, "slurm");
  EXPECT_EQ(topo->rank, 4);
  EXPECT_EQ(topo->local_world_size, 1);
}

TEST_F(TopologyTest, BadValuesAreInvalidArguments) {
  Set({{"RANK", "one"}, {"WORLD_SIZE", "2"}});
  Result<Topology> topo = DiscoverTopology(1, "startup", 0);
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(topo.status().message().find("RANK='one'"), std::string::npos) << topo.status().message();

  Set({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
  topo = DiscoverTopology(1, "startup", 0);
  ASSERT_FALSE(topo.ok());
  EXPECT_NE(topo.status().message().find("rank 2 is outside a world of 2"), std::string::npos);

  Set({{"RANK", "0"}, {"WORLD_SIZE", "6"}});
  topo = DiscoverTopology(4, "startup", 0);
  ASSERT_FALSE(topo.ok());
  EXPECT_NE(topo.status().message().find("4 slices"), std::string::npos) << topo.status().message();

  topo = DiscoverTopology(0, "startup", 0);
  ASSERT_FALSE(topo.ok());
}

TEST_F(TopologyTest, CountsEveryCallWithItsOrigin) {
  std::vector<DiscoveryRecord> observed;
  SetDiscoveryObserver([&](const DiscoveryRecord& r) { observed.push_back(r); });
  EXPECT_EQ(DiscoveryCount(), 0);
  ASSERT_TRUE(DiscoverTopology(1, "startup", 0).ok());
  EXPECT_EQ(DiscoveryCount(), 1);
  ASSERT_TRUE(DiscoverTopology(1, "attention_forward", 7).ok());
  // A failing call counts too: it still ran.
  EXPECT_FALSE(DiscoverTopology(0, "attention_forward", 8).ok());
  EXPECT_EQ(DiscoveryCount(), 3);

  std::vector<DiscoveryRecord> calls = DiscoveryCalls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].call, 1);
  EXPECT_EQ(calls[0].phase, "startup");
  EXPECT_EQ(calls[0].step, 0);
  EXPECT_EQ(calls[1].call, 2);
  EXPECT_EQ(calls[1].phase, "attention_forward");
  EXPECT_EQ(calls[1].step, 7);
  EXPECT_EQ(calls[2].step, 8);
  ASSERT_EQ(observed.size(), 3u);
  EXPECT_EQ(observed[1].call, 2);
  EXPECT_EQ(observed[2].phase, "attention_forward");

  ResetDiscoveryForTest();
  EXPECT_EQ(DiscoveryCount(), 0);
  ASSERT_TRUE(DiscoverTopology(1, "startup", 0).ok());
  EXPECT_EQ(observed.size(), 3u) << "the reset removed the observer";
}

TEST_F(TopologyTest, DeviceFollowsLocalRankModuloDevices) {
  Set({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "4"}});
  Result<Topology> topo = DiscoverTopology(1, "startup", 0);
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  if (topo->cuda_device_count == 0) {
    EXPECT_EQ(topo->cuda_device, -1);
    EXPECT_EQ(topo->DeviceFor(Device::kCuda).status().code(), StatusCode::kUnavailable);
  } else {
    EXPECT_EQ(topo->cuda_device, 3 % topo->cuda_device_count);
    EXPECT_EQ(topo->DeviceFor(Device::kCuda).value(), "cuda:" + std::to_string(3 % topo->cuda_device_count));
  }
  EXPECT_EQ(topo->DeviceFor(Device::kCpu).value(), "cpu");
}

// cuda without a visible device is an error naming the rank, never "cpu" in its place.
TEST_F(TopologyTest, CudaWithoutADeviceIsAnErrorNotTheCpu) {
  Topology topo;
  topo.rank = 2;
  Result<std::string> device = topo.DeviceFor(Device::kCuda);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(device.status().message().find("device cuda: no CUDA device is visible to rank 2"), std::string::npos)
      << device.status().message();
  topo.cuda_device_count = 2;
  topo.cuda_device = 1;
  EXPECT_EQ(topo.DeviceFor(Device::kCuda).value(), "cuda:1");
  EXPECT_EQ(topo.DeviceFor(Device::kCpu).value(), "cpu");
}

}  // namespace
}  // namespace lockstep
