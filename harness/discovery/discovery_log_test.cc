#include "harness/discovery/discovery_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lockstep {
namespace {

class DiscoveryLogTest : public ::testing::Test {
 protected:
  void SetUp() override { ResetDiscoveryForTest(); }
  void TearDown() override { ResetDiscoveryForTest(); }
};

TEST_F(DiscoveryLogTest, CallsCarryTheContextOfTheirMoment) {
  RecordDiscovery("mpi.init_thread", "", "mpi:world");
  SetDiscoveryContext("step", 3);
  {
    ScopedDiscoveryPhase phase("attention_forward");
    RecordDiscovery("torch.new_group", "model.py:41 in forward");
  }
  RecordDiscovery("mpi.comm_split");
  RecordDiscoveryAt("lockstep.topology", "startup", 0);

  const std::vector<DiscoveryRecord> calls = DiscoveryCalls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(DiscoveryCount(), 4);
  EXPECT_EQ(calls[0].call, 1);
  EXPECT_EQ(calls[0].phase, "startup");
  EXPECT_EQ(calls[0].step, 0);
  EXPECT_EQ(calls[0].comm, "mpi:world");
  EXPECT_EQ(calls[1].name, "torch.new_group");
  EXPECT_EQ(calls[1].phase, "attention_forward");
  EXPECT_EQ(calls[1].step, 3);
  EXPECT_EQ(calls[1].where, "model.py:41 in forward");
  EXPECT_EQ(calls[2].phase, "step");  // the scoped phase ended
  EXPECT_EQ(calls[2].step, 3);
  EXPECT_EQ(calls[3].call, 4);
  EXPECT_EQ(calls[3].phase, "startup");
  EXPECT_EQ(calls[3].step, 0);
}

// MPI_Init runs before the trace is open: the observer, set later, gets the earlier calls first,
// in order, then every new one.
TEST_F(DiscoveryLogTest, TheObserverIsHandedTheEarlierCallsFirst) {
  RecordDiscovery("mpi.init");
  RecordDiscovery("lockstep.topology");
  std::vector<std::string> seen;
  SetDiscoveryObserver([&seen](const DiscoveryRecord& r) { seen.push_back(std::to_string(r.call) + " " + r.name); });
  RecordDiscovery("mpi.comm_split");
  EXPECT_EQ(seen, (std::vector<std::string>{"1 mpi.init", "2 lockstep.topology", "3 mpi.comm_split"}));
  SetDiscoveryObserver(nullptr);
  RecordDiscovery("mpi.comm_dup");
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(DiscoveryCount(), 4);
}

}  // namespace
}  // namespace lockstep
