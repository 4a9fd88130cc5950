#include "harness/launcher/rank_cpu.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

using Clock = RankCpu::Clock;
using std::chrono::seconds;

TEST(RankCpuTest, ShareOverTheWindow) {
  RankCpu cpu(2);
  const Clock::time_point t0 = Clock::now();
  cpu.Add(0, 100, t0, 10.0, 60);
  cpu.Add(0, 100, t0 + seconds(10), 15.0, 60);
  cpu.Add(0, 100, t0 + seconds(20), 15.0, 60);
  // From the newest sample at or before the window's start to the last one.
  EXPECT_DOUBLE_EQ(*cpu.ShareOver(0, t0 + seconds(20), 10), 0.0);
  EXPECT_DOUBLE_EQ(*cpu.ShareOver(0, t0 + seconds(20), 20), 0.25);
  EXPECT_FALSE(cpu.ShareOver(0, t0 + seconds(20), 30).has_value()) << "the samples do not reach back 30 s";
  EXPECT_FALSE(cpu.ShareOver(1, t0 + seconds(20), 10).has_value()) << "never sampled";
}

TEST(RankCpuTest, ANewProcessStartsANewHistory) {
  RankCpu cpu(1);
  const Clock::time_point t0 = Clock::now();
  cpu.Add(0, 100, t0, 50.0, 60);
  cpu.Add(0, 200, t0 + seconds(10), 1.0, 60);
  EXPECT_FALSE(cpu.ShareOver(0, t0 + seconds(10), 5).has_value());
}

TEST(RankCpuTest, OldSamplesAreDroppedButTheWindowsStartKept) {
  RankCpu cpu(1);
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i <= 100; ++i) cpu.Add(0, 1, t0 + seconds(i), i * 0.5, 10);
  EXPECT_DOUBLE_EQ(*cpu.ShareOver(0, t0 + seconds(100), 10), 0.5);
  EXPECT_FALSE(cpu.ShareOver(0, t0 + seconds(100), 50).has_value());
}

// A child that spins counts, through its parent's tree; one that sleeps does not.
TEST(RankCpuTest, ProcessTreeCpuSecondsCountsABusyDescendant) {
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    ::setpgid(0, 0);  // a group of its own, which the test ends in one kill
    const pid_t child = ::fork();
    if (child == 0) {
      volatile unsigned long x = 0;
      for (;;) x = x + 1;  // a data-loader worker at work
    }
    for (;;) ::pause();  // the rank's main process, blocked on its queue
  }
  ::setpgid(parent, parent);  // both sides, so that the group exists whoever runs first
  const std::optional<double> before = ProcessTreeCpuSeconds(parent);
  ASSERT_TRUE(before.has_value());
  // CPU time, not wall time: wait until the busy child has had some, however loaded the machine.
  std::optional<double> after = before;
  for (int i = 0; i < 600 && after && *after - *before < 0.2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    after = ProcessTreeCpuSeconds(parent);
  }
  ::kill(-parent, SIGKILL);  // the parent and its busy child
  EXPECT_TRUE(after.has_value());
  if (after) {
    EXPECT_GE(*after - *before, 0.2);
  }
  int status = 0;
  ::waitpid(parent, &status, 0);
}

TEST(RankCpuTest, AProcessThatIsGoneHasNoCpuTime) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_FALSE(ProcessTreeCpuSeconds(child).has_value());
}

}  // namespace
}  // namespace lockstep
