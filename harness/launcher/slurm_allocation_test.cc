#include "harness/launcher/slurm_allocation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SlurmAllocationTest, HostlistsExpandInOrderKeepingTheirPadding) {
  Result<std::vector<std::string>> nodes = ExpandHostlist("node[0-2,5],gpu[07-08],login,rack1-n[9-10]x");
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_THAT(*nodes, ElementsAre("node0", "node1", "node2", "node5", "gpu07", "gpu08", "login", "rack1-n9x", "rack1-n10x"));
  EXPECT_THAT(*ExpandHostlist("a"), ElementsAre("a"));
}

TEST(SlurmAllocationTest, UnreadableHostlistsAreErrorsNamingThem) {
  for (const std::string& bad : {std::string(""), std::string("node[1-"), std::string("node[3-1]"), std::string("n[a-b]"),
                                 std::string("n[1]]"), std::string("a,,b")}) {
    Result<std::vector<std::string>> nodes = ExpandHostlist(bad);
    EXPECT_FALSE(nodes.ok()) << bad;
  }
  EXPECT_THAT(ExpandHostlist("node[3-1]").status().message(), HasSubstr("node[3-1]"));
}

TEST(SlurmAllocationTest, TheAllocationComesFromTheJobsEnvironment) {
  EXPECT_FALSE(AllocationFromEnvironment({}).has_value());
  EXPECT_FALSE(AllocationFromEnvironment({{"SLURM_JOB_ID", "7"}}).has_value());
  std::optional<SlurmAllocation> a = AllocationFromEnvironment({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n[1-2]"}});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->job_id, "7");
  EXPECT_THAT(a->nodes, ElementsAre("n1", "n2"));
  EXPECT_FALSE(a->ours);  // never given back by lockstep
}

TEST(SlurmAllocationTest, RunCommandSaysTheExitAndTheOutputAndStopsWhatRunsTooLong) {
  Result<CommandOutput> out = RunCommand({"/bin/sh", "-c", "echo hello; echo err >&2; exit 3"}, 10);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_THAT(out->output, HasSubstr("hello"));
  EXPECT_THAT(out->output, HasSubstr("err"));
  Result<CommandOutput> slow = RunCommand({"/bin/sleep", "30"}, 0.3);
  EXPECT_FALSE(slow.ok());
  Result<CommandOutput> missing = RunCommand({"no-such-program-xyz"}, 5);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->exit_code, 127);
}

}  // namespace
}  // namespace lockstep
