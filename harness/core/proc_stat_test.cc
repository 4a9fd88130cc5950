#include "harness/core/proc_stat.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace lockstep {
namespace {

// Polls pid's stat until `want` holds of it (the child needs a moment to get there), up to 10 s.
template <typename Want>
std::optional<ProcStat> WaitFor(pid_t pid, Want want) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::optional<ProcStat> stat;
  while (std::chrono::steady_clock::now() < until) {
    stat = ReadProcStat(pid);
    if (stat && want(*stat)) return stat;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return stat;
}

TEST(ProcStatTest, ARunningProcessIsNotEnding) {
  const std::optional<ProcStat> self = ReadProcStat(::getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->pid, ::getpid());
  EXPECT_EQ(self->ppid, ::getppid());
  EXPECT_EQ(self->state, 'R');
  EXPECT_FALSE(IsEnding(*self)) << "flags " << std::hex << self->flags;
}

TEST(ProcStatTest, AnUnreapedChildIsEnding) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  const std::optional<ProcStat> stat = WaitFor(child, [](const ProcStat& s) { return s.state == 'Z'; });
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->state, 'Z');
  EXPECT_TRUE(IsEnding(*stat));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(ReadProcStat(child).has_value());
}

TEST(ProcStatTest, AnEndingProcessTellsTheSignalItDiesOf) {
  const pid_t killed = ::fork();
  ASSERT_GE(killed, 0);
  if (killed == 0) {
    for (;;) ::pause();
  }
  const pid_t exited = ::fork();
  ASSERT_GE(exited, 0);
  if (exited == 0) ::_exit(3);
  ASSERT_EQ(::kill(killed, SIGTERM), 0);
  const auto zombie = [](const ProcStat& s) { return s.state == 'Z'; };
  const std::optional<ProcStat> by_signal = WaitFor(killed, zombie);
  const std::optional<ProcStat> by_exit = WaitFor(exited, zombie);
  ASSERT_TRUE(by_signal.has_value() && by_exit.has_value());
  EXPECT_EQ(EndingSignal(*by_signal), SIGTERM) << "exit_code " << by_signal->exit_code;
  EXPECT_EQ(EndingSignal(*by_exit), std::nullopt) << "exit_code " << by_exit->exit_code;
  EXPECT_EQ(by_exit->exit_code, 3 << 8);
  const std::optional<ProcStat> running = ReadProcStat(::getpid());
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(EndingSignal(*running), std::nullopt);
  int status = 0;
  EXPECT_EQ(::waitpid(killed, &status, 0), killed);
  EXPECT_EQ(::waitpid(exited, &status, 0), exited);
}

// The shape of a rank killed by a signal whose end takes seconds: its leader is done, another of
// its threads is not, and until that one ends its parent cannot reap it. A sleeping process,
// before that, is not ending.
TEST(ProcStatTest, AProcessWhoseLeaderEndedBeforeItsOtherThreadsIsEnding) {
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char byte = 0;
    if (::read(go[0], &byte, 1) != 1) ::_exit(1);
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      ::_exit(0);
    }).detach();
    // The leader ends (the exit system call ends one thread; pthread_exit would unwind through
    // the test framework's frames); the process lives on in the other thread.
    ::syscall(SYS_exit, 0);
  }
  ::close(go[0]);
  const std::optional<ProcStat> asleep = WaitFor(child, [](const ProcStat& s) { return s.state == 'S'; });
  ASSERT_TRUE(asleep.has_value());
  EXPECT_FALSE(IsEnding(*asleep)) << "state " << asleep->state << ", flags " << std::hex << asleep->flags;
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  ::close(go[1]);
  const std::optional<ProcStat> ending = WaitFor(child, [](const ProcStat& s) { return IsEnding(s); });
  ASSERT_TRUE(ending.has_value());
  EXPECT_TRUE(IsEnding(*ending)) << "state " << ending->state << ", flags " << std::hex << ending->flags;
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, WNOHANG), 0) << "reaped while its other thread still ran";
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
}

}  // namespace
}  // namespace lockstep
