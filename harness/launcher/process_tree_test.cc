#include "harness/launcher/process_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

LaunchCommand Shell(const std::string& script, const std::filesystem::path& output = {}) {
  LaunchCommand cmd;
  cmd.argv = {"/bin/sh", "-c", script};
  cmd.output = output;
  return cmd;
}

// Waits until `pred` holds or `limit` passes.
template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

TEST(ProcessTreeTest, CapturesOutputAndExitStatus) {
  const testing::TempDir temp("lockstep-ptree-");
  const std::filesystem::path& dir = temp.path();
  ProcessTree tree(NewLaunchId());
  auto pid = tree.Spawn(Shell("echo out; echo err >&2; echo \"$LOCKSTEP_LAUNCH_ID\"; exit 3", dir / "log"));
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return tree.Poll(*pid).has_value(); }));
  const int status = *tree.Poll(*pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  std::ifstream in(dir / "log");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "out\nerr\n" + tree.launch_id() + "\n");
}

TEST(ProcessTreeTest, ChildrenShareANewProcessGroup) {
  ProcessTree tree(NewLaunchId());
  auto a = tree.Spawn(Shell("sleep 30"));
  auto b = tree.Spawn(Shell("sleep 30"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(tree.process_group(), *a);
  EXPECT_EQ(ReadProcInfo(*a)->pgid, *a);
  EXPECT_EQ(ReadProcInfo(*b)->pgid, *a);
  EXPECT_NE(ReadProcInfo(*a)->pgid, ::getpgrp());
  tree.KillAll(1000ms);
  EXPECT_TRUE(WIFSIGNALED(*tree.Poll(*a)));
  EXPECT_EQ(WTERMSIG(*tree.Poll(*b)), SIGTERM);
}

TEST(ProcessTreeTest, MissingProgramIsAnError) {
  ProcessTree tree(NewLaunchId());
  LaunchCommand cmd;
  cmd.argv = {"/nonexistent/lockstep-rank"};
  auto pid = tree.Spawn(cmd);
  ASSERT_FALSE(pid.ok());
  EXPECT_THAT(pid.status().message(), HasSubstr("/nonexistent/lockstep-rank"));
  EXPECT_THAT(pid.status().message(), HasSubstr("No such file"));
}

// A grandchild that starts its own session and ignores SIGTERM (as a daemon would) is found
// through the marker and the parent tree, and killed with SIGKILL after the grace period.
TEST(ProcessTreeTest, KillsDescendantsThatLeftTheGroup) {
  ProcessTree tree(NewLaunchId());
  auto pid = tree.Spawn(Shell("setsid sh -c 'trap \"\" TERM; sleep 60; sleep 60' & sleep 60"));
  ASSERT_TRUE(pid.ok());
  // Wait until the grandchild has left our process group (and its session).
  auto left_group = [&] {
    const auto members = tree.Members();
    bool other_group = false;
    for (pid_t p : members) {
      auto info = ReadProcInfo(p);
      other_group = other_group || (info && info->pgid != tree.process_group());
    }
    return members.size() >= 3 && other_group;
  };
  ASSERT_TRUE(WaitFor(left_group)) << tree.Members().size();

  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_GE(tree.KillAll(300ms), 3);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_TRUE(tree.Members().empty());
  EXPECT_TRUE(FindProcessesWithEnv(kLaunchIdEnv, tree.launch_id()).empty());
  EXPECT_TRUE(tree.Poll(*pid).has_value());
}

// After the parent is gone, the orphan is reparented away from us: only the marker finds it.
TEST(ProcessTreeTest, FindsOrphansByTheMarker) {
  ProcessTree tree(NewLaunchId());
  auto pid = tree.Spawn(Shell("setsid sleep 60 & exit 0"));
  ASSERT_TRUE(pid.ok());
  ASSERT_TRUE(WaitFor([&] { return tree.Poll(*pid).has_value(); }));
  ASSERT_TRUE(WaitFor([&] { return FindProcessesWithEnv(kLaunchIdEnv, tree.launch_id()).size() == 1; }));
  EXPECT_EQ(tree.Members().size(), 1u);
  tree.KillAll(500ms);
  EXPECT_TRUE(FindProcessesWithEnv(kLaunchIdEnv, tree.launch_id()).empty());
}

TEST(ProcessTreeTest, DestructorEndsEverything) {
  std::string id = NewLaunchId();
  {
    ProcessTree tree(id);
    ASSERT_TRUE(tree.Spawn(Shell("sleep 60 & sleep 60")).ok());
    ASSERT_TRUE(WaitFor([&] { return tree.Members().size() >= 2; }));
  }
  EXPECT_TRUE(FindProcessesWithEnv(kLaunchIdEnv, id).empty());
}

// The owner of a launch dies by SIGKILL (nothing of it runs any more): every process it started
// ends all the same, including one that left the group and ignores SIGTERM, and one that runs no
// code of lockstep's. Its watcher did it, and is gone too.
TEST(ProcessTreeTest, EverythingEndsWhenTheOwnerIsKilled) {
  const std::string id = NewLaunchId();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t owner = ::fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    ::close(fds[0]);
    ProcessTree tree(id);
    const bool ok = tree.Spawn(Shell("sleep 300")).ok() &&
                    tree.Spawn(Shell("(trap '' TERM; setsid sleep 300) & wait")).ok();
    const int32_t watcher = ok ? tree.watcher() : -1;
    (void)!::write(fds[1], &watcher, sizeof(watcher));
    for (;;) ::pause();
  }
  ::close(fds[1]);
  int32_t watcher = 0;
  ASSERT_EQ(::read(fds[0], &watcher, sizeof(watcher)), static_cast<ssize_t>(sizeof(watcher)));
  ::close(fds[0]);
  ASSERT_GT(watcher, 0) << "the owner could not start its processes";
  // Bounds a stuck test only: the processes are up within milliseconds.
  ASSERT_TRUE(WaitFor([&] { return FindProcessesWithEnv(kLaunchIdEnv, id).size() >= 3; }));
  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);
  std::this_thread::sleep_for(2s);
  const std::vector<pid_t> left = FindProcessesWithEnv(kLaunchIdEnv, id);
  EXPECT_THAT(left, ::testing::IsEmpty()) << "processes of the launch outlived its owner by 2 s";
  EXPECT_FALSE(IsAlive(watcher)) << "the watcher ends once it has ended the launch";
  for (pid_t p : left) ::kill(p, SIGKILL);
}

// A launch that ends normally ends its watcher: nothing of it is left, and nothing is killed.
TEST(ProcessTreeTest, TheWatcherEndsWithTheTree) {
  pid_t watcher = 0;
  {
    ProcessTree tree(NewLaunchId());
    ASSERT_TRUE(tree.Spawn(Shell("exit 0")).ok());
    watcher = tree.watcher();
    ASSERT_GT(watcher, 0);
    EXPECT_TRUE(IsAlive(watcher));
    ASSERT_TRUE(WaitFor([&] { return tree.AllEnded(); }));
  }
  EXPECT_FALSE(IsAlive(watcher));
}

TEST(ProcessTreeTest, ProcInfoOfSelf) {
  auto info = ReadProcInfo(::getpid());
  ASSERT_TRUE(info);
  EXPECT_EQ(info->ppid, ::getppid());
  EXPECT_EQ(info->pgid, ::getpgrp());
  EXPECT_GT(info->start_time, 0u);
  EXPECT_TRUE(IsAlive(::getpid()));
  EXPECT_FALSE(ReadProcInfo(-5).has_value());
  EXPECT_NE(NewLaunchId(), NewLaunchId());
}

}  // namespace
}  // namespace lockstep
