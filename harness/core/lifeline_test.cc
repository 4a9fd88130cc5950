#include "harness/core/lifeline.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace lockstep {
namespace {

TEST(LifelineTest, NamesAProcessByPidStartTimeAndHost) {
  const std::string self = LifelineOfThisProcess();
  EXPECT_TRUE(LifelineAlive(self)) << self;
  // The same pid with another start time is a reused pid: not the harness.
  const std::string pid = std::to_string(::getpid());
  EXPECT_FALSE(LifelineAlive(pid + ":1@" + self.substr(self.find('@') + 1)));
  EXPECT_TRUE(LifelineAlive("garbage")) << "nothing to watch is not a death";
}

// A "harness" process starts a "rank" that watches it; the harness is SIGKILLed, as
// `lockstep run` may be; the rank must be gone soon after, with nobody signalling it.
TEST(LifelineTest, ARankDiesWithItsHarness) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t harness = ::fork();
  ASSERT_GE(harness, 0);
  if (harness == 0) {
    ::setenv(kLifelineEnv, LifelineOfThisProcess().c_str(), 1);
    const pid_t rank = ::fork();
    if (rank == 0) {
      WatchLifeline();
      for (;;) ::pause();
    }
    (void)!::write(pipe_fds[1], &rank, sizeof rank);
    for (;;) ::pause();
  }
  pid_t rank = 0;
  ASSERT_EQ(::read(pipe_fds[0], &rank, sizeof rank), static_cast<ssize_t>(sizeof rank));
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  const std::string rank_lifeline = std::to_string(rank) + ":" + std::to_string(ProcessStartTime(rank).value_or(0)) +
                                    LifelineOfThisProcess().substr(LifelineOfThisProcess().find('@'));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(LifelineAlive(rank_lifeline)) << "the rank must live while its harness does";

  ::kill(harness, SIGKILL);
  ::waitpid(harness, nullptr, 0);
  // The rank looks four times a second; 30 s only bounds a stuck test on a loaded machine.
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    gone = !LifelineAlive(rank_lifeline);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "the rank outlived its harness";
  if (!gone) ::kill(rank, SIGKILL);
}

}  // namespace
}  // namespace lockstep
